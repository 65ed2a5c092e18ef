# Expected log-likelihoods E[log p(y | f)], f ~ N(m, s2), and their
# derivatives against numerical integration and differentiation.

loglik_ref <- list(
  gaussian = function(y, f, nv) dnorm(y, f, sqrt(nv), log = TRUE),
  probit = function(y, f, nv) y * pnorm(f, log.p = TRUE) + (1 - y) * pnorm(-f, log.p = TRUE),
  logit = function(y, f, nv) y * plogis(f, log.p = TRUE) + (1 - y) * plogis(-f, log.p = TRUE),
  poisson = function(y, f, nv) dpois(y, exp(f), log = TRUE)
)

# E[log p(y | f)] by integrate() over +-12 sd.
expect_int <- function(fam, y, m, s2, nv = 0.7) {
  sd <- sqrt(s2)
  integrate(function(f) loglik_ref[[fam]](y, f, nv) * dnorm(f, m, sd), m - 12 * sd, m + 12 * sd,
            rel.tol = 1e-12, abs.tol = 0, subdivisions = 2000L)$value
}

lik_points <- list(
  gaussian = list(y = c(-1, 0.5, 2, 0, 3), m = c(-1.5, 0.3, 2, 0, 2.2), s2 = c(0.05, 0.5, 1, 0.2, 3)),
  probit = list(y = c(0, 1, 1, 0, 1, 1), m = c(-1.5, 0.3, 2, 0, -2.2, -4), s2 = c(0.05, 0.5, 1, 0.2, 0.8, 0.3)),
  logit = list(y = c(0, 1, 1, 0, 1, 1), m = c(-1.5, 0.3, 2, 0, -2.2, -4), s2 = c(0.05, 0.5, 1, 0.2, 0.8, 0.3)),
  poisson = list(y = c(0, 3, 7, 1, 12), m = c(-1.5, 0.3, 2, 0, 2.2), s2 = c(0.05, 0.5, 1, 0.2, 3))
)

for (fam in names(lik_points)) {
  test_that(paste("expected log-likelihood and its derivatives match integrate():", fam), {
    pt <- lik_points[[fam]]
    k <- length(pt$y)
    r <- scalegp:::.lik_expect(fam, pt$y, rep(1, k), pt$m, pt$s2, 0.7, 20)
    expect_equal(dim(r), c(k, 3L))
    v <- mapply(function(y, m, s2) expect_int(fam, y, m, s2), pt$y, pt$m, pt$s2)
    h <- 1e-4
    dm <- mapply(function(y, m, s2) (expect_int(fam, y, m + h, s2) - expect_int(fam, y, m - h, s2)) / (2 * h),
                 pt$y, pt$m, pt$s2)
    ds2 <- mapply(function(y, m, s2) (expect_int(fam, y, m, s2 + h) - expect_int(fam, y, m, s2 - h)) / (2 * h),
                  pt$y, pt$m, pt$s2)
    tol <- if (fam %in% c("gaussian", "poisson")) 1e-8 else 1e-6
    expect_close(r[, 1], v, tol)
    expect_close(r[, 2], dm, 1e-6)
    expect_close(r[, 3], ds2, 1e-6)
  })
}

test_that("the probit expectation is accurate far in the tail (log Phi asymptotics)", {
  # y = 1 with m very negative: log Phi(f) ~ -f^2 / 2, both sides of z = -30
  m <- c(-25, -35, -45)
  s2 <- c(0.01, 0.02, 0.01)
  r <- scalegp:::.lik_expect("probit", c(1, 1, 1), rep(1, 3), m, s2, 1, 20)
  v <- mapply(function(m, s2) expect_int("probit", 1, m, s2), m, s2)
  expect_equal(r[, 1], v, tolerance = 1e-8)
  expect_true(all(is.finite(r)))
  # d/dm E log Phi(f) ~ -f for f -> -Inf: check against differences
  h <- 1e-3
  dm <- mapply(function(m, s2) (expect_int("probit", 1, m + h, s2) - expect_int("probit", 1, m - h, s2)) / (2 * h),
               m, s2)
  expect_equal(r[, 2], dm, tolerance = 1e-6)
  # the mirror image y = 0, m very positive, gives the same values
  r0 <- scalegp:::.lik_expect("probit", c(0, 0, 0), rep(1, 3), -m, s2, 1, 20)
  expect_equal(r0[, 1], r[, 1], tolerance = 1e-12)
  expect_equal(r0[, 2], -r[, 2], tolerance = 1e-12)
})

test_that("more Gauss-Hermite nodes agree for binomial likelihoods", {
  for (fam in c("probit", "logit")) {
    r20 <- scalegp:::.lik_expect(fam, c(0, 1, 1), rep(1, 3), c(-1, 0.5, 2), c(0.3, 1, 0.5), 1, 20)
    r60 <- scalegp:::.lik_expect(fam, c(0, 1, 1), rep(1, 3), c(-1, 0.5, 2), c(0.3, 1, 0.5), 1, 60)
    expect_close(r20, r60, 1e-7)
  }
})

test_that("prior weights enter the expected log-likelihood as documented", {
  # binomial: w trials with success proportion y
  r <- scalegp:::.lik_expect("logit", 2 / 3, 3, 0.4, 0.6, 1, 20)
  expect_equal(r[1, 1], 3 * expect_int("logit", 2 / 3, 0.4, 0.6), tolerance = 1e-7)
  r <- scalegp:::.lik_expect("probit", 0.25, 4, -0.3, 0.5, 1, 20)
  expect_equal(r[1, 1], 4 * expect_int("probit", 0.25, -0.3, 0.5), tolerance = 1e-7)
  # poisson: w multiplies the log-likelihood
  r <- scalegp:::.lik_expect("poisson", 4, 2.5, 1.1, 0.4, 1, 20)
  expect_equal(r[1, 1], 2.5 * expect_int("poisson", 4, 1.1, 0.4), tolerance = 1e-9)
  expect_equal(r[1, 2], 2.5 * (4 - exp(1.1 + 0.2)), tolerance = 1e-12)
  # gaussian: precision weights, y ~ N(f, noise_var / w)
  w <- 2
  r <- scalegp:::.lik_expect("gaussian", 1, w, 0.5, 0.3, 0.7, 20)
  ref <- integrate(function(f) dnorm(1, f, sqrt(0.7 / w), log = TRUE) * dnorm(f, 0.5, sqrt(0.3)),
                   0.5 - 12 * sqrt(0.3), 0.5 + 12 * sqrt(0.3), rel.tol = 1e-12)$value
  expect_equal(r[1, 2], w * (1 - 0.5) / 0.7, tolerance = 1e-12)
  expect_equal(r[1, 3], -0.5 * w / 0.7, tolerance = 1e-12)
  expect_equal(r[1, 1], ref, tolerance = 1e-8)
})

test_that("predictive response moments match integrate()", {
  invlink <- list(probit = pnorm, logit = plogis, poisson = exp)
  m <- c(-1, 0.5, 1.5, 2.5)
  s2 <- c(0.3, 1, 0.1, 0.6)
  y <- c(1, 0, 1, 1)
  for (fam in names(invlink)) {
    r <- scalegp:::.lik_predictive(fam, if (fam == "poisson") c(1, 0, 3, 30) else y, m, s2, 1, 20)
    mom <- function(p, m, s2) integrate(function(f) invlink[[fam]](f)^p * dnorm(f, m, sqrt(s2)),
                                        m - 15 * sqrt(s2), m + 15 * sqrt(s2), rel.tol = 1e-12)$value
    m1 <- mapply(mom, 1, m, s2)
    m2 <- mapply(mom, 2, m, s2)
    expect_close(r[, 2], m1, 1e-7)
    expect_close(r[, 3], sqrt(m2 - m1^2), 1e-6)
    # log predictive density log int p(y | f) N(f; m, s2) df
    yy <- if (fam == "poisson") c(1, 0, 3, 30) else y
    lpd <- mapply(function(y, m, s2) log(integrate(function(f) exp(loglik_ref[[fam]](y, f, 1)) * dnorm(f, m, sqrt(s2)),
                                                   m - 15 * sqrt(s2), m + 15 * sqrt(s2), rel.tol = 1e-12)$value),
                  yy, m, s2)
    # (adaptive quadrature: also for a large count far from exp(m), y = 30)
    expect_close(r[, 1], lpd, 1e-6)
  }
  # gaussian: mean m, sd sqrt(s2) (latent), density with the noise added
  r <- scalegp:::.lik_predictive("gaussian", c(0.2, 1), c(0, 1.5), c(0.3, 0.1), 0.5, 20)
  expect_equal(r[, 2], c(0, 1.5))
  expect_equal(r[, 3], sqrt(c(0.3, 0.1)), tolerance = 1e-12)
  expect_equal(r[, 1], dnorm(c(0.2, 1), c(0, 1.5), sqrt(c(0.8, 0.6)), log = TRUE), tolerance = 1e-10)
  # no y: the density column is NA
  expect_true(all(is.na(scalegp:::.lik_predictive("logit", numeric(), 0.1, 0.2, 1, 20)[, 1])))
})

# ---- the likelihoods with their own parameter: Gamma (log shape) and the
# negative binomial (log theta); .lik_expect_param() takes it on the log scale
# the fit moves it and returns its derivative as a fourth column.

test_that("digamma of the C++ core matches R's to 1e-12", {
  x <- c(1e-8, 1e-3, 0.1, 0.5, 1, 1.4616321449683622, 2.5, 7.3, 9.999, 10, 10.001, 37.3, 1e3, 1e6, 1e10)
  r <- scalegp:::.digamma(x)
  expect_true(all(abs(r - digamma(x)) <= 1e-12 * pmax(1, abs(digamma(x)))),
              label = paste("max error", format(max(abs(r - digamma(x)) / pmax(1, abs(digamma(x)))), digits = 3)))
  expect_true(all(is.nan(scalegp:::.digamma(c(0, -1)))))
})

# log p(y | f) with the parameter on its natural scale: Gamma shape k (weights
# multiply the shape), negative binomial theta (weights multiply the log-likelihood).
loglik_par <- list(
  gamma = function(y, w, f, k) dgamma(y, shape = k * w, rate = k * w / exp(f), log = TRUE),
  negbin = function(y, w, f, th) w * dnbinom(y, size = th, mu = exp(f), log = TRUE),
  gaussian = function(y, w, f, nv) dnorm(y, f, sqrt(nv / w), log = TRUE)
)
expect_par_int <- function(fam, y, w, m, s2, par) {
  sd <- sqrt(s2)
  integrate(function(f) loglik_par[[fam]](y, w, f, par) * dnorm(f, m, sd), m - 12 * sd, m + 12 * sd,
            rel.tol = 1e-13, abs.tol = 0, subdivisions = 2000L)$value
}
# the parameter as .lik_expect_param() takes it: log(k), log(theta), log(noise variance - 1e-6)
to_par <- function(fam, lp) if (fam == "gaussian") exp(lp) + 1e-6 else exp(lp)

par_points <- list(
  gamma = list(y = c(2, 0.3, 7.5, 1, 0.05, 12), w = c(1, 2, 0.5, 1, 1, 1), m = c(0.8, -1, 2, 0.1, 1.5, 2.2),
               s2 = c(0.4, 1, 0.2, 3, 1e-4, 0.05), lp = c(-0.5, 1.6, 0.2, 3, 0.7, 6)),
  # small variances (the Gauss-Hermite ladder), up to 1 (20 nodes), above 1 (composite rule)
  negbin = list(y = c(0, 3, 1, 12, 40, 2, 0, 150), w = c(1, 1, 2, 0.5, 1, 1, 1, 1),
                m = c(-1, 0.8, 0.1, 2, 3, 0.5, -3, 4.5), s2 = c(0.005, 0.03, 0.2, 0.6, 1, 2.5, 6, 0.1),
                lp = c(-1, 1.1, 0.3, 5, 2, -0.4, 1, 3)),
  gaussian = list(y = c(-1, 0.5, 2), w = c(1, 2, 0.7), m = c(-1.5, 0.3, 2.4), s2 = c(0.05, 0.5, 1),
                  lp = c(-0.4, -2, 0.3))
)

for (fam in names(par_points)) {
  test_that(paste("expected log-likelihood and its derivatives in m, s2 and the log parameter match integrate():", fam), {
    pt <- par_points[[fam]]
    h <- 1e-4
    for (i in seq_along(pt$y)) {
      y <- pt$y[i]; w <- pt$w[i]; m <- pt$m[i]; s2 <- pt$s2[i]; lp <- pt$lp[i]
      r <- scalegp:::.lik_expect_param(fam, y, w, m, s2, lp, 20)
      expect_equal(dim(r), c(1L, 4L))
      E <- function(m, s2, lp) expect_par_int(fam, y, w, m, s2, to_par(fam, lp))
      v <- E(m, s2, lp)
      dm <- (E(m + h, s2, lp) - E(m - h, s2, lp)) / (2 * h)
      ds2 <- (E(m, s2 + h / 10, lp) - E(m, s2 - h / 10, lp)) / (2 * h / 10)
      dlp <- (E(m, s2, lp + h) - E(m, s2, lp - h)) / (2 * h)
      lab <- sprintf("%s row %d", fam, i)
      expect_equal(r[1, 1], v, tolerance = 1e-9, label = paste(lab, "value"))
      expect_equal(r[1, 2], dm, tolerance = 1e-6, label = paste(lab, "d/dm"))
      expect_equal(r[1, 3], ds2, tolerance = 1e-6, label = paste(lab, "d/ds2"))
      expect_equal(r[1, 4], dlp, tolerance = 1e-6, label = paste(lab, "d/dlog parameter"))
    }
  })
}

test_that("the Gamma expectation is the closed form with E exp(-f) = exp(-m + s2/2)", {
  y <- c(0.7, 3.2); w <- c(1, 1.5); m <- c(0.2, 1.1); s2 <- c(0.3, 0.8); k <- 4.2
  r <- scalegp:::.lik_expect_param("gamma", y, w, m, s2, log(k), 20)
  a <- k * w
  E <- exp(-m + s2 / 2)
  expect_equal(r[, 1], a * log(a) - lgamma(a) + (a - 1) * log(y) - a * m - a * y * E, tolerance = 1e-13)
  expect_equal(r[, 2], a * (y * E - 1), tolerance = 1e-13)
  expect_equal(r[, 3], -a * y * E / 2, tolerance = 1e-13)
  expect_equal(r[, 4], a * (log(a) + 1 - digamma(a) + log(y) - m - y * E), tolerance = 1e-12)
  # and Monte Carlo agrees with the value
  set.seed(1)
  f <- rnorm(2e5, m[2], sqrt(s2[2]))
  mc <- dgamma(y[2], shape = a[2], rate = a[2] / exp(f), log = TRUE)
  expect_lt(abs(mean(mc) - r[2, 1]), 4 * sd(mc) / sqrt(length(mc)))
})

test_that("the old families' parameter column is the Gaussian noise derivative or 0", {
  r <- scalegp:::.lik_expect_param("gaussian", 1, 2, 0.5, 0.3, log(0.7 - 1e-6), 20)
  expect_equal(r[1, 1:3], scalegp:::.lik_expect("gaussian", 1, 2, 0.5, 0.3, 0.7, 20)[1, ], tolerance = 1e-14)
  for (fam in c("poisson", "logit", "probit"))
    expect_equal(scalegp:::.lik_expect_param(fam, 1, 1, 0.3, 0.4, 0.5, 20)[1, 4], 0)
})

test_that("Gamma and negative binomial predictive densities and moments match integrate()", {
  m <- c(-0.5, 0.5, 1.5); s2 <- c(0.3, 1.4, 0.1)
  for (fam in c("gamma", "negbin")) {
    par <- 2.3
    y <- if (fam == "gamma") c(0.4, 1.9, 6.2) else c(0, 2, 9)
    r <- scalegp:::.lik_predictive(fam, y, m, s2, par, 20)
    lpd <- mapply(function(y, m, s2) log(integrate(function(f) exp(loglik_par[[fam]](y, 1, f, par)) * dnorm(f, m, sqrt(s2)),
                                                   m - 15 * sqrt(s2), m + 15 * sqrt(s2), rel.tol = 1e-12)$value),
                  y, m, s2)
    expect_close(r[, 1], lpd, 1e-7)
    expect_equal(r[, 2], exp(m + s2 / 2), tolerance = 1e-13)
    expect_equal(r[, 3], exp(m + s2 / 2) * sqrt(expm1(s2)), tolerance = 1e-13)
  }
})
