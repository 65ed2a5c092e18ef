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
