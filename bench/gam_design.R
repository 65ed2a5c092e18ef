# The simulated design shared by bench/gam_vs_mgcv.R, bench/term_coverage.R
# and bench/coverage_draws.R (sourced by them):
#   f = sin(3 x1) + 0.5 x2^2 + 2 exp(-(x3^2 + x4^2)),  x ~ U(-2, 2)^4
#   gaussian: y = f + N(0, 0.3^2), truth = f
#   binomial: y ~ Bernoulli(truth), truth = plogis(2 (f - fbar))
ftrue <- function(d) sin(3 * d$x1) + 0.5 * d$x2^2 + 2 * exp(-(d$x3^2 + d$x4^2))
gen <- function(n, family = "gaussian", fbar = 0) {
  d <- as.data.frame(matrix(runif(4 * n, -2, 2), n, dimnames = list(NULL, paste0("x", 1:4))))
  f <- ftrue(d)
  if (family == "gaussian") {
    d$truth <- f
    d$y <- f + rnorm(n, sd = 0.3)
  } else {
    d$truth <- plogis(2 * (f - fbar))
    d$y <- rbinom(n, 1, d$truth)
  }
  d
}
