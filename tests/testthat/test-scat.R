# The scaled Student-t (mgcv's scat()) with inference = "vi": its expected
# log-likelihood and derivatives (in m, s2, the log squared scale and
# log(df - min_df)) against integrate() in both quadrature regimes, the
# predictive density, the objective's gradient against finite differences,
# a fit at a stationary point with rows where E[l''] > 0, recovery of the
# term, scale and df against mgcv::gam(family = scat()), given parameters,
# the methods, and refusals.

# log p(y | f): location f, scale sqrt(s2 / w), df nu
ldt <- function(y, w, f, s2, nu) {
  sc <- sqrt(s2 / w)
  dt((y - f) / sc, nu, log = TRUE) - log(sc)
}
t_int <- function(h, m, s2) {
  sd <- sqrt(s2)
  integrate(function(f) h(f) * dnorm(f, m, sd), m - 12 * sd, m + 12 * sd, rel.tol = 1e-13, abs.tol = 0,
            subdivisions = 5000L)$value
}

test_that("the scaled t's expected log-likelihood and its derivatives match integrate() and differences", {
  min_df <- 3
  # rows: small and large latent variances against the t's scale (Gauss-Hermite
  # while s2 <= df scale^2 / 8, the composite rule beyond), an outlier row
  # (|y - m| >> scale, where E[l''] > 0), weights
  pts <- data.frame(y = c(0.3, 2, -1, 5, 0.1, 1), w = c(1, 1, 2, 1, 0.5, 1), m = c(0, 0.2, -0.8, 0, 0.3, 0.9),
                    s2 = c(0.01, 0.3, 0.05, 0.02, 4, 1e-6), lp = c(log(0.2), log(0.5), log(0.1), log(0.04), 0, -2),
                    ldf = c(log(2), 0, log(20), log(0.5), 1, 3))
  h <- 1e-4
  for (i in seq_len(nrow(pts))) {
    p <- pts[i, ]
    r <- scalegp:::.lik_expect_param("scat", p$y, p$w, p$m, p$s2, p$lp, 20, c(p$ldf, min_df))
    expect_equal(dim(r), c(1L, 5L))
    E <- function(m = p$m, s2 = p$s2, lp = p$lp, ldf = p$ldf)
      t_int(function(f) ldt(p$y, p$w, f, exp(lp) + 1e-6, min_df + exp(ldf)), m, s2)
    lab <- sprintf("row %d", i)
    expect_equal(r[1, 1], E(), tolerance = 1e-9, label = paste(lab, "value"))
    expect_equal(r[1, 2], (E(m = p$m + h) - E(m = p$m - h)) / (2 * h), tolerance = 1e-6, label = paste(lab, "d/dm"))
    hs <- min(h, p$s2 / 10)
    expect_equal(r[1, 3], (E(s2 = p$s2 + hs) - E(s2 = p$s2 - hs)) / (2 * hs), tolerance = 1e-5,
                 label = paste(lab, "d/ds2"))
    expect_equal(r[1, 4], (E(lp = p$lp + h) - E(lp = p$lp - h)) / (2 * h), tolerance = 1e-6,
                 label = paste(lab, "d/dlog scale^2"))
    expect_equal(r[1, 5], (E(ldf = p$ldf + h) - E(ldf = p$ldf - h)) / (2 * h), tolerance = 1e-6,
                 label = paste(lab, "d/dlog(df - min_df)"))
  }
  # the outlier row's curvature is positive (the log density is not concave)
  r4 <- scalegp:::.lik_expect_param("scat", 5, 1, 0, 0.02, log(0.04), 20, c(log(0.5), 3))
  expect_gt(r4[1, 3], 0)
  # a zero weight removes the row
  expect_equal(unname(scalegp:::.lik_expect_param("scat", 1, 0, 0, 0.1, 0, 20, c(0, 3))[1, ]), rep(0, 5))
})

test_that("the scaled t's predictive density and moments match integrate()", {
  y <- c(0.2, 3, -1); m <- c(0, 0.5, -1.2); s2 <- c(0.01, 2, 0.3); sc2 <- 0.25; nu <- 4.5
  r <- scalegp:::.lik_predictive("scat", y, m, s2, c(sc2, nu, 3), 20)
  lpd <- mapply(function(y, m, s2) log(t_int(function(f) exp(ldt(y, 1, f, sc2, nu)), m, s2)), y, m, s2)
  expect_close(r[, 1], lpd, 1e-9)
  expect_equal(r[, 2], m)
  expect_equal(r[, 3], sqrt(s2), tolerance = 1e-14)
})

# data: y = f(x) + 0.3 z + scale * t_df
t_data <- function(n, seed, df = 4, scale = 0.3) {
  set.seed(seed)
  d <- data.frame(x = runif(n), z = rnorm(n))
  d$f <- sin(2 * pi * d$x)
  d$y <- d$f + 0.3 * d$z + scale * rt(n, df)
  d
}
term_rmse <- function(est, truth) sqrt(mean(((est - mean(est)) - (truth - mean(truth)))^2))

test_that("the objective's gradient in the kernel, the log squared scale and log(df - min_df) matches differences", {
  skip_if_not_installed("mgcv")
  d <- t_data(200, 3)
  fit <- gpgam(y ~ gp(x) + z, data = d, family = mgcv::scat(), control = qctl(inducing = 10, tol = 1e-8))
  f <- gp_objective(fit)
  p0 <- attr(f, "start")
  expect_equal(names(p0)[3:4], c("log squared scale", "log(df - min_df)"))
  expect_equal(f(p0)$objective, fit$objective + fit$log_prior, tolerance = 1e-8)
  away <- p0 + c(0.3, -0.2, 0.25, -0.4)
  h <- 1e-4
  s_away <- sapply(seq_along(away), function(k) {
    up <- away; dn <- away
    up[k] <- away[k] + h; dn[k] <- away[k] - h
    (f(up)$objective - f(dn)$objective) / (2 * h)
  })
  g <- f(away)$gradient
  expect_true(all(abs(s_away[3:4]) > 1))  # both parameters move the objective
  expect_close(g, s_away, 1e-3 * max(abs(s_away)), label = paste("gradient", paste(signif(g - s_away, 3), collapse = " ")))
})

test_that("scaled t: a stationary fit with heavy tails recovers the term, scale and df as well as mgcv::gam (scat)", {
  skip_if_not_installed("mgcv")
  d <- t_data(1500, 1, df = 5, scale = 0.3)
  fit <- gpgam(y ~ gp(x) + z, data = d, family = mgcv::scat(), control = qctl())
  expect_true(fit$converged)
  expect_equal(fit$stop, "stationary point")
  expect_lt(max(abs(fit$gradient)), 0.05)  # (of an objective of size 1500 rows)
  expect_equal(names(fit$gradient)[length(fit$gradient)], "log(df - min_df)")
  expect_lt(abs(fit$params$sigma / 0.3 - 1), 0.15)
  expect_lt(abs(fit$params$df - 5), 1.5)
  expect_equal(sigma(fit), fit$params$sigma)
  expect_equal(unname(coef(fit)["z"]), 0.3, tolerance = 0.05 / 0.3)
  g <- mgcv::gam(y ~ s(x) + z, data = d, family = mgcv::scat(), method = "REML")
  # df and scale as mgcv estimates them (both maximise a marginal likelihood of the same model)
  expect_equal(unname(fit$params$theta), unname(g$family$getTheta(TRUE)), tolerance = 0.02)
  r_gp <- term_rmse(predict(fit, d, type = "terms")[, "gp(x)"], d$f)
  r_gam <- term_rmse(predict(g, d, type = "terms")[, "s(x)"], d$f)
  expect_lt(r_gp, 1.5 * r_gam + 0.02)
  # against a Gaussian fit of the same data: the heavy tails do not pull the curve
  fg <- gpgam(y ~ gp(x) + z, data = d, control = qctl())
  expect_lt(r_gp, term_rmse(predict(fg, d, type = "terms")[, "gp(x)"], d$f))
  # identity link: the mean response is the linear predictor, se.fit its sd
  nd <- data.frame(x = c(0.1, 0.5), z = 0)
  expect_equal(predict(fit, nd, type = "response", se.fit = TRUE), predict(fit, nd, se.fit = TRUE))
})

test_that("scat(theta = c(df, sigma)) holds both; negative values start them; min.df is kept", {
  skip_if_not_installed("mgcv")
  d <- t_data(300, 2)
  fit <- gpgam(y ~ gp(x), data = d, family = mgcv::scat(), control = qctl(inducing = 15))
  fx <- gpgam(y ~ gp(x), data = d, family = mgcv::scat(theta = c(5, 0.25)), control = qctl(inducing = 15))
  expect_equal(unname(fx$params$theta), c(5, 0.25), tolerance = 1e-10)
  expect_true(fx$params$theta_fixed)
  expect_equal(fx$df, fit$df - 2)
  expect_false(any(c("log squared scale", "log(df - min_df)") %in% names(fx$gradient)))
  expect_output(print(fx), "scale: 0.25, df: 5 (given)", fixed = TRUE)
  # the family at the fit: mgcv's scat() deviance
  fam <- family(fx)
  mu <- fitted(fx)
  expect_equal(unname(residuals(fx)), unname(sign(d$y - mu) * sqrt(6 * log1p((d$y - mu)^2 / (5 * 0.25^2)))),
               tolerance = 1e-12)
  expect_equal(fam$link, "identity")
  # min.df is the lower bound of an estimated df
  f6 <- gpgam(y ~ gp(x), data = d, family = mgcv::scat(min.df = 6), control = qctl(inducing = 15))
  expect_gt(f6$params$df, 6)
  expect_equal(f6$params$min_df, 6)
  # negative theta: start values, both estimated (the same optimum as the default start)
  fs <- gpgam(y ~ gp(x), data = d, family = mgcv::scat(theta = -c(8, 0.5)), control = qctl(inducing = 15))
  expect_false(fs$params$theta_fixed)
  expect_equal(fs$params$df, fit$params$df, tolerance = 0.02)
  # gp_control(fixed = "sigma") holds the scale at gp_control(sigma = ) and estimates df
  fh <- gpgam(y ~ gp(x), data = d, family = mgcv::scat(), control = qctl(inducing = 15, sigma = 0.2, fixed = "sigma"))
  expect_equal(fh$params$sigma, 0.2, tolerance = 1e-6)
  expect_equal(names(fh$gradient)[length(fh$gradient)], "log(df - min_df)")
  expect_false("log squared scale" %in% names(fh$gradient))
})

test_that("print, summary, simulate and logLik of a scaled t fit; refusals", {
  skip_if_not_installed("mgcv")
  d <- t_data(200, 4)
  fit <- gpgam(y ~ gp(x) + z, data = d, family = mgcv::scat(), control = qctl(inducing = 10))
  expect_output(print(fit), "Family: scaled t (identity)", fixed = TRUE)
  expect_output(print(fit), "scale: [0-9.]+, df: [0-9.]+")
  expect_output(print(summary(fit)), "scale: [0-9.]+, df: [0-9.]+")
  s <- simulate(fit, nsim = 200, seed = 1)
  # simulated residual scale against the fitted t's: the median absolute deviation
  # of scale * t_df is scale * qt(0.75, df)
  mad_sim <- median(abs(as.matrix(s) - fitted(fit)))
  expect_equal(mad_sim, fit$params$sigma * qt(0.75, fit$params$df), tolerance = 0.1)
  expect_equal(attr(logLik(fit), "df"), fit$df)
  # other engines refuse it
  for (inf in c("ep", "decoupled", "qsgp"))
    expect_error(gpgam(y ~ gp(x), data = d, family = mgcv::scat(), inference = inf, control = qctl()),
                 paste0("'family' the scaled t \\(scat\\(\\)\\) is not supported by inference = \"", inf, "\""))
  expect_error(gpgam(y ~ gp(x), data = d, family = mgcv::scat(link = "log"), control = qctl()),
               "'family' scat\\(\\) with link 'log' is not supported")
  d$yc <- as.character(round(d$y))
  expect_error(gpgam(yc ~ gp(x), data = d, family = mgcv::scat(), control = qctl()), "'yc' must be numeric for scat\\(\\)")
})
