# The simulated design shared by bench/gam_vs_mgcv.R, bench/term_coverage.R,
# bench/coverage_draws.R, bench/term_cost.R and others (sourced by them):
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

# One row of a results table: a fit's seconds, test NLPD and 95% coverage on
# the test rows of gen() (mu, se: latent mean and sd; binomial: on the logit
# scale, with the method's own probabilities as attr(mu, "p")):
#   cover_f: intervals for the latent function (Gaussian: f; binomial: the
#            probability) covering the truth;  cover_y: predictive intervals
#            covering new y (Gaussian only).
score <- function(method, family, n, secs, mu, se, sigma, test) {
  if (family == "gaussian") {
    sdp <- sqrt(se^2 + sigma^2)
    nlpd <- -mean(dnorm(test$y, mu, sdp, log = TRUE))
    cf <- mean(abs(test$truth - mu) <= 1.96 * se)
    cy <- mean(abs(test$y - mu) <= 1.96 * sdp)
  } else {  # mu, se on the link (logit) scale; p from the method's own response
    p <- attr(mu, "p")
    nlpd <- -mean(dbinom(test$y, 1, p, log = TRUE))
    cf <- mean(plogis(mu - 1.96 * se) <= test$truth & test$truth <= plogis(mu + 1.96 * se))
    cy <- NA
  }
  data.frame(family = family, n = n, method = method, seconds = secs, nlpd = nlpd, cover_f = cf, cover_y = cy)
}

# score() of a fitted model on the test rows: a gpgam() fit (its own
# response probabilities and sigma()) or an mgcv fit (plogis() of the link,
# sqrt(sig2)).
score_fit <- function(method, family, n, secs, fit, test) {
  p <- predict(fit, test, se.fit = TRUE)
  mu <- p$fit
  gp <- inherits(fit, "gpgam")
  if (family == "binomial") attr(mu, "p") <- if (gp) predict(fit, test, type = "response") else plogis(mu)
  score(method, family, n, secs, mu, p$se.fit, if (gp) sigma(fit) else sqrt(fit$sig2), test)
}
