# The location-scale Gaussian (gpgam(list(y ~ ..., ~ ...), family = gaulss()),
# R/gaulss.R): the closed-form expected log-likelihood, the block coordinate
# ascent (monotone, stationary), the homoscedastic limit, recovery of a
# known log sd against mgcv's gaulss(), predictive intervals, methods and
# refusals.

gaulss_data <- function(n, seed) {
  set.seed(seed)
  d <- data.frame(x = runif(n), z = rnorm(n))
  d$mu <- sin(2 * pi * d$x) + 0.5 * d$z
  d$lsd <- -1.6 + 1.4 * d$x^2 + 0.4 * sin(6 * d$x)
  d$y <- d$mu + exp(d$lsd) * rnorm(n)
  d
}

test_that("the expected log-likelihood is E[log N(y; f, exp(2g))] (2-D Gauss-Hermite)", {
  gh <- scalegp:::gauss_hermite(60)
  for (case in list(c(0.3, -0.2, 0.4, -1, 0.3), c(2, 1, 0.01, 0.5, 1.2), c(-1, 0.5, 2, 1, 0.05))) {
    y <- case[1]; mf <- case[2]; vf <- case[3]; me <- case[4]; ve <- case[5]
    f <- mf + sqrt(2 * vf) * gh$t
    e <- me + sqrt(2 * ve) * gh$t
    ll <- outer(f, e, function(f, e) stats::dnorm(y, f, exp(e / 2), log = TRUE))
    num <- drop(crossprod(gh$w, ll %*% gh$w)) / pi
    expect_close(scalegp:::gaulss_ell(y, mf, vf, me, ve), num, 1e-10)
  }
})

test_that("a gaulss fit recovers a known log sd about as well as mgcv's gaulss(), and converges", {
  skip_if_not_installed("mgcv")
  d <- gaulss_data(600, 11)
  d0 <- d
  fit <- gpgam(list(y ~ gp(x) + z, ~ gp(x)), data = d, family = mgcv::gaulss(),
               control = gp_control(verbose = FALSE, seed = 1, threads = 1))
  expect_identical(d, d0)  # the user's data unchanged
  expect_s3_class(fit, "gpgam_ls")
  expect_true(fit$converged)
  expect_identical(fit$stop, "stationary point")
  # block coordinate ascent: the joint objective never falls (beyond the sub-fits' tolerances)
  expect_true(all(diff(fit$trace) > -1e-4 * fit$n))
  g <- mgcv::gam(list(y ~ s(x) + z, ~ s(x)), data = d, family = mgcv::gaulss())
  lp <- predict(fit, type = "link")
  rmse <- function(a, b) sqrt(mean((a - b)^2))
  r_mu <- rmse(lp[, "mean"], d$mu)
  r_lsd <- rmse(lp[, "log_sd"], d$lsd)
  g_lsd <- rmse(log(1 / (predict(g, type = "response")[, 2])), d$lsd)
  g_mu <- rmse(fitted(g)[, 1], d$mu)
  expect_lt(r_lsd, 1.5 * g_lsd)
  expect_lt(r_lsd, 0.15)
  expect_lt(r_mu, 1.5 * g_mu)
  # the z coefficient
  expect_close(coef(fit)[["z"]], 0.5, 0.05)
  # the fitted sd and sigma()
  expect_equal(unname(sigma(fit)), unname(fitted(fit)[, "sd"]))
  expect_close(mean(log(sigma(fit))), mean(d$lsd), 0.1)
})

test_that("with an intercept-only log sd the fit is the homoscedastic one", {
  d <- gaulss_data(500, 3)
  d$y <- d$mu + 0.3 * rnorm(500)
  ctl <- gp_control(verbose = FALSE, seed = 2, threads = 1)
  fit <- gpgam(list(y ~ gp(x) + z, ~ 1), data = d, family = mgcv::gaulss(), control = ctl)
  h <- gpgam(y ~ gp(x) + z, data = d, control = ctl)
  expect_true(fit$converged)
  expect_lt(abs(sigma(fit)[1] / sigma(h) - 1), 0.02)
  expect_close(predict(fit, type = "link")[, "mean"], fitted(h), 0.03)
  # the ELBOs differ by the KL of the log sd's intercept and by the expected
  # log-likelihood lost to its posterior variance v: n v / 4 (eta = 2 g), at
  # the optimal intercept, log mean((y - f)^2 + v_f) + v / 2
  v_eta <- 4 * predict(fit, type = "link", se.fit = TRUE)$se.fit[1, "log_sd"]^2
  expect_close(logLik(h) - logLik(fit), fit$scale$kl + 500 * v_eta / 4, 0.05)
  # summary() and anova() of the intercept-only log sd (they stopped on its empty term table)
  out <- capture.output(print(summary(fit)))
  expect_true(any(grepl("== Log sd ==", out)))
  expect_equal(nrow(anova(fit$scale)), 0L)
  # df.residual(): rows of non-zero weight minus the edf of both predictors
  edf <- function(f) sum(vapply(f$params$gp, `[[`, 1, "edf")) + length(coef(f))
  expect_equal(df.residual(fit), 500 - edf(fit$mean) - edf(fit$scale), tolerance = 1e-12)
  w <- rep(1, nrow(d))
  w[1:50] <- 0
  fw <- gpgam(list(y ~ gp(x) + z, ~ 1), data = d, weights = w, family = mgcv::gaulss(), control = ctl)
  expect_equal(df.residual(fw), 450 - edf(fw$mean) - edf(fw$scale), tolerance = 1e-12)
})

test_that("predict() of a gaulss fit: columns, terms that add up, response moments, intervals", {
  d <- gaulss_data(300, 5)
  fit <- gpgam(list(y ~ gp(x) + z, ~ gp(x) + z), data = d, family = mgcv::gaulss(),
               control = gp_control(verbose = FALSE, seed = 1, threads = 1, inducing = 15))
  nd <- data.frame(x = c(0.1, 0.5, 0.9), z = c(-1, 0, 1))
  lp <- predict(fit, nd, type = "link", se.fit = TRUE)
  expect_identical(colnames(lp$fit), c("mean", "log_sd"))
  expect_true(all(lp$se.fit > 0))
  tt <- predict(fit, nd, type = "terms")
  expect_identical(colnames(tt), c("z", "z.1", "gp(x)", "gp.1(x)"))  # (mgcv's order)
  const <- attr(tt, "constant")
  expect_close(rowSums(tt[, c("gp(x)", "z")]) + const[["mean"]], lp$fit[, "mean"], 1e-8)
  expect_close(rowSums(tt[, c("gp.1(x)", "z.1")]) + const[["log_sd"]], lp$fit[, "log_sd"], 1e-8)
  r <- predict(fit, nd, type = "response", se.fit = TRUE)
  # sigma = exp(g), g ~ N(m, s^2): lognormal mean and sd
  m <- lp$fit[, "log_sd"]; s <- lp$se.fit[, "log_sd"]
  expect_close(r$fit[, "sd"], exp(m + s^2 / 2), 1e-10)
  expect_close(r$se.fit[, "sd"], sqrt(expm1(s^2)) * exp(m + s^2 / 2), 1e-10)
  expect_close(r$fit[, "mean"], lp$fit[, "mean"], 1e-12)
  # the prediction interval's ends are the mixture's quantiles (cdf by integrate())
  pi95 <- predict(fit, nd, interval = "prediction", level = 0.9)
  for (i in 1:3) {
    cdf <- function(yv) stats::integrate(function(g) stats::dnorm(g, m[i], s[i]) *
      stats::pnorm((yv - lp$fit[i, "mean"]) / sqrt(lp$se.fit[i, "mean"]^2 + exp(2 * g))),
      m[i] - 12 * s[i], m[i] + 12 * s[i], rel.tol = 1e-10)$value
    expect_close(cdf(pi95[i, "lwr"]), 0.05, 1e-6)
    expect_close(cdf(pi95[i, "upr"]), 0.95, 1e-6)
  }
  ci <- predict(fit, nd, interval = "confidence")
  expect_close(ci[, "upr"] - ci[, "fit"], stats::qnorm(0.975) * lp$se.fit[, "mean"], 1e-10)
  expect_true(all(pi95[, "upr"] - pi95[, "lwr"] > ci[, "upr"] - ci[, "lwr"]))
})

test_that("prediction intervals of a gaulss fit cover new data at their level", {
  d <- gaulss_data(800, 21)
  fit <- gpgam(list(y ~ gp(x) + z, ~ gp(x)), data = d, family = mgcv::gaulss(),
               control = gp_control(verbose = FALSE, seed = 1, threads = 1))
  nd <- gaulss_data(4000, 22)
  p <- predict(fit, nd, interval = "prediction")
  cover <- mean(nd$y >= p[, "lwr"] & nd$y <= p[, "upr"])
  expect_gt(cover, 0.93)
  expect_lt(cover, 0.97)
  # where the noise is large the intervals are wide: width follows the true sd
  expect_gt(stats::cor(log(p[, "upr"] - p[, "lwr"]), nd$lsd), 0.9)
})

test_that("methods of a gaulss fit: print, summary, plot, coef, vcov, residuals, simulate, logLik", {
  d <- gaulss_data(250, 8)
  fit <- gpgam(list(y ~ gp(x) + z, ~ gp(x)), data = d, family = mgcv::gaulss(),
               control = gp_control(verbose = FALSE, seed = 1, threads = 1, inducing = 12))
  expect_output(print(fit), "Log sd:")
  s <- summary(fit)
  expect_output(print(s), "== Log sd ==")
  expect_identical(rownames(s$scale$s.table), "gp(x)")
  expect_identical(names(coef(fit)), c("(Intercept)", "z", "(Intercept).1"))
  v <- vcov(fit)
  expect_identical(dim(v), c(3L, 3L))
  expect_equal(v[3, 3], vcov(fit$scale)[1, 1] / 4)
  expect_equal(v[1, 3], 0)
  expect_close(residuals(fit, "response"), d$y - fitted(fit)[, "mean"], 1e-12)
  expect_close(residuals(fit, "pearson"), (d$y - fitted(fit)[, "mean"]) / fitted(fit)[, "sd"], 1e-12)
  expect_s3_class(logLik(fit), "logLik")
  expect_equal(as.numeric(logLik(fit)), fit$objective)
  pdf(NULL)
  on.exit(grDevices::dev.off())
  out <- plot(fit, pages = 1)
  expect_named(out, c("mean", "log_sd"))
  # the log-sd panel is the term's curve halved (eta = 2 g)
  expect_true(grepl("gp.1(x", out$log_sd[[1]]$label, fixed = TRUE) || grepl("gp.1(x", out$log_sd[[1]]$ylab, fixed = TRUE))
  sims <- simulate(fit, nsim = 400, seed = 1)
  expect_identical(dim(sims), c(250L, 400L))
  z <- (rowMeans(sims) - fitted(fit)[, "mean"]) / (fitted(fit)[, "sd"] / sqrt(400))
  expect_lt(mean(abs(z) > 3.5), 0.02)
  expect_close(mean(apply(sims, 1, stats::sd) / fitted(fit)[, "sd"]), 1, 0.05)
  expect_error(anova(fit), "one location-scale \\(gaulss\\) fit is not available")
  expect_error(AIC(fit), "logLik\\(fit1\\) - logLik\\(fit2\\)")
  # family(): the links this model uses
  expect_identical(family(fit)$link, c("identity", "log"))
  expect_close(family(fit)$linfo[[2]]$linkinv(predict(fit, type = "link")[, "log_sd"]),
               exp(predict(fit, type = "link")[, "log_sd"]), 1e-12)
  # plot(): the returned log-sd panel is g (not 2 g), as predict(type = "terms") gives it
  pp <- plot(fit, select = 2)$log_sd[[1]]
  tt <- predict(fit, data.frame(x = pp$x, z = 0), type = "terms", se.fit = TRUE)
  expect_close(pp$fit, tt$fit[, "gp.1(x)"], 1e-8)
  expect_close(pp$se, tt$se.fit[, "gp.1(x)"], 1e-8)
  expect_identical(plot(fit, which = "trace"), fit$trace)
  expect_silent(plot(fit, trans = exp, shift = 1))
})

test_that("predict() of a gaulss fit keeps the rows of both predictors paired under every na.action", {
  d <- gaulss_data(300, 3)
  fit <- gpgam(list(y ~ gp(x), ~ gp(z)), data = d, family = mgcv::gaulss(),
               control = gp_control(verbose = FALSE, inducing = 12, seed = 1, threads = 1))
  nd <- d[1:6, ]
  full <- predict(fit, nd)
  nd$x[2] <- NA
  nd$z[4] <- NA
  p <- predict(fit, nd)
  expect_true(all(is.na(p[c(2, 4), ])))
  expect_close(p[c(1, 3, 5, 6), ], full[c(1, 3, 5, 6), ], 1e-12)
  po <- predict(fit, nd, na.action = stats::na.omit)
  expect_identical(rownames(po), c("1", "3", "5", "6"))
  expect_close(po, full[c(1, 3, 5, 6), ], 1e-12)
  expect_error(predict(fit, nd, na.action = stats::na.fail), "'na.action' failed")
  tt <- predict(fit, nd, type = "terms")
  expect_true(all(is.na(tt[c(2, 4), ])))
  expect_identical(colnames(predict(fit, nd, type = "terms", terms = "gp.1(z)")), "gp.1(z)")
  # mgcv's label of the same term, s.1(z)
  expect_identical(predict(fit, nd, type = "terms", terms = "s.1(z)"), predict(fit, nd, type = "terms", terms = "gp.1(z)"))
  expect_error(predict(fit, nd, type = "terms", terms = "gp(w)"), "'terms' must be labels")
  f2 <- gpgam(list(y ~ gp(x), ~ log(z + 5)), data = d, family = mgcv::gaulss(),
              control = gp_control(verbose = FALSE, inducing = 12, seed = 1, threads = 1))
  expect_identical(colnames(predict(f2, type = "terms")), c("log(z + 5).1", "gp(x)"))  # (mgcv's order)
  expect_identical(names(coef(f2))[3], "log(z + 5).1")
  # data-dependent terms in either formula are evaluated at new rows with the fitting rows' coefficients
  f3 <- gpgam(list(y ~ gp(x) + poly(z, 2), ~ poly(z, 2)), data = d, family = mgcv::gaulss(),
              control = gp_control(verbose = FALSE, inducing = 12, seed = 1, threads = 1))
  expect_close(predict(f3, d[1:5, ]), predict(f3)[1:5, ], 1e-6)
  # without newdata, a fit with na.exclude pads the dropped rows with NA (as fitted())
  dm <- d
  dm$y[c(5, 9)] <- NA
  fe <- gpgam(list(y ~ gp(x), ~ gp(z)), data = dm, family = mgcv::gaulss(), na.action = na.exclude,
              control = gp_control(verbose = FALSE, inducing = 12, seed = 1, threads = 1))
  pe <- predict(fe, se.fit = TRUE)
  expect_equal(dim(pe$fit), c(300L, 2L))
  expect_equal(which(is.na(pe$fit[, 1])), c(5L, 9L), ignore_attr = TRUE)
  expect_equal(which(is.na(pe$se.fit[, 2])), c(5L, 9L), ignore_attr = TRUE)
  expect_equal(nrow(predict(fe, type = "terms")), 300L)
  expect_close(predict(fe, d[-c(5, 9), ])[, "mean"], na.omit(predict(fe)[, "mean"]), 1e-10)
  # simulate() pads them too, with the data's row names (it stopped on duplicated row names)
  se <- simulate(fe, nsim = 2, seed = 1)
  expect_identical(dim(se), c(300L, 2L))
  expect_identical(which(is.na(se$sim_1)), c(5L, 9L))
  expect_identical(rownames(se), rownames(d))
  # a newdata column of NA only (logical, as data.frame(x = NA) makes it) predicts NA
  expect_true(all(is.na(predict(fit, data.frame(x = NA, z = 0.5)))))
})

test_that("gaulss refusals name the argument", {
  d <- gaulss_data(100, 1)
  ctl <- gp_control(verbose = FALSE, inducing = 8)
  # anova() of a one-predictor fit with a gaulss fit; types a gaulss fit has not
  fl <- gpgam(list(y ~ gp(x), ~ gp(x)), data = d, family = mgcv::gaulss(), control = ctl)
  fv <- gpgam(y ~ gp(x), data = d, control = ctl)
  expect_error(anova(fv, fl), "mixes fits of one predictor with location-scale")
  expect_error(anova(fl, fv), "mixes fits of one predictor with location-scale")
  expect_error(predict(fl, d[1:2, ], type = "lpmatrix"), "'type' = \"lpmatrix\" is not available for location-scale")
  expect_error(gpgam(list(y ~ gp(x), ~ gp(x)), data = d, control = ctl), "needs family = mgcv::gaulss")
  expect_error(gpgam(y ~ gp(x), data = d, family = mgcv::gaulss(), control = ctl), "list of two formulas")
  expect_error(gpgam(list(y ~ gp(x), y ~ gp(x)), data = d, family = mgcv::gaulss(), control = ctl), "one-sided")
  expect_error(gpgam(list(y ~ gp(x)), data = d, family = mgcv::gaulss(), control = ctl), "list of two formulas")
  expect_error(gpgam(list(y ~ gp(x), ~ gp(x)), data = d, family = mgcv::gaulss(), inference = "ep", control = ctl),
               "'inference'")
  expect_error(gpgam(list(y ~ gp(x), ~ gp(x) + offset(z)), data = d, family = mgcv::gaulss(), control = ctl),
               "offsets are for the mean only")
  d$f <- factor(rep(c("a", "b"), 50))
  expect_error(gpgam(list(f ~ gp(x), ~ gp(x)), data = d, family = mgcv::gaulss(), control = ctl), "'f' of family = gaulss\\(\\) must be")
  expect_error(gp_control(cycles = 0), "'cycles'")
  d1 <- d
  d1$y <- 2
  expect_error(gpgam(list(y ~ gp(x), ~ gp(x)), data = d1, family = mgcv::gaulss(), control = ctl), "'y' is constant")
  expect_error(gp_control(cycles = 1), "'cycles' must be at least 2")
  if (requireNamespace("MASS", quietly = TRUE)) {  # (mcycle needs about 9 cycles)
    mc <- MASS::mcycle
    op <- options(scalegp.warn_convergence = NULL)  # (off for the other tests: helper-scalegp.R)
    on.exit(options(op), add = TRUE)
    expect_warning(nc <- gpgam(list(accel ~ gp(times), ~ gp(times)), data = mc, family = mgcv::gaulss(),
                               control = gp_control(verbose = FALSE, seed = 1, cycles = 2)),
                   "did not converge in 2 cycles \\(the last raised")
    expect_false(nc$converged)
  }
  d2 <- d
  d2$y[3] <- NA
  d2$x[5] <- NA
  f2 <- gpgam(list(y ~ gp(x), ~ gp(x)), data = d2, family = mgcv::gaulss(), control = ctl)
  expect_identical(f2$n, 98L)
  expect_identical(length(residuals(f2)), 98L)
  expect_error(gpgam(list(y ~ gp(x), ~ gp(x)), data = d2, family = mgcv::gaulss(), control = ctl,
                     na.action = na.fail), "'na.action' failed: missing values")
  expect_warning(gpgam(list(y ~ gp(x), ~ 1), data = d, family = "gaulss",
                       control = gp_control(verbose = FALSE, inducing = 8, sigma = 1)), "do not apply")
  d$z2 <- 2 * d$z  # (a setup's warning names the formula it is about)
  expect_warning(fz <- gpgam(list(y ~ gp(x), ~ z + z2), data = d, family = mgcv::gaulss(), control = ctl),
                 "^the scale formula: the parametric design is rank deficient \\('z2'")
  expect_identical(unname(coef(fz)["z2.1"]), 0)
  expect_error(predict(fz, d[1:3, ], exclude = "z"), "'exclude' is not supported for location-scale")
})

test_that("gaulss fits enlarge a Hilbert basis that is too small, as gpgam() does", {
  set.seed(2)
  d <- data.frame(x1 = runif(400), x2 = runif(400))
  d$y <- sin(12 * d$x1) + exp(-1 + d$x2) * rnorm(400)
  fit <- gpgam(list(y ~ gp(x1, basis = "hilbert", k = 8), ~ gp(x2)), data = d, family = "gaulss",
               control = gp_control(verbose = FALSE, seed = 1, threads = 1))
  expect_gt(fit$mean$state$specs[[1]]$hs_m, 8)
  expect_lt(sqrt(mean((predict(fit, type = "link")[, "mean"] - sin(12 * d$x1))^2)), 0.2)
})

test_that("update() of a gaulss fit changes either formula and refits as a direct call would", {
  d <- gaulss_data(300, 5)
  ctl <- gp_control(verbose = FALSE, seed = 1, threads = 1)
  fit <- gpgam(list(y ~ gp(x), ~ gp(x)), data = d, family = "gaulss", control = ctl)
  direct <- gpgam(list(y ~ gp(x) + z, ~ gp(x) + z), data = d, family = "gaulss", control = ctl)
  both <- update(fit, list(. ~ . + z, ~ . + z))
  expect_identical(both$formula[[2]], direct$formula[[2]])
  expect_equal(logLik(both)[[1]], logLik(direct)[[1]], tolerance = 1e-12)
  expect_equal(update(fit, list(. ~ . + z, . ~ . + z))$objective, direct$objective, tolerance = 1e-12)
  mean_only <- update(fit, . ~ . + z)  # one formula: the mean's
  expect_identical(deparse(mean_only$formula[[2]]), "~gp(x)")
  expect_true("z" %in% names(coef(mean_only)))
  sub <- update(fit, data = d[1:200, ])
  expect_equal(nobs(sub), 200L)
  u <- update(fit, list(. ~ . + z, ~ . + z), evaluate = FALSE)
  expect_identical(lapply(u$formula, deparse), list("y ~ gp(x) + z", "~gp(x) + z"))
  expect_identical(u$data, quote(d))
  expect_error(update(fit, list(. ~ ., y ~ .)), "formula\\.")
  expect_error(update(fit, list(. ~ ., ~ ., ~ .)), "formula\\.")
  expect_identical(fit$formula, list(y ~ gp(x), ~ gp(x)), ignore_attr = TRUE)  # the fit is unchanged
  # anova() of several gaulss fits: their joint ELBOs and differences
  a <- anova(fit, both)
  expect_s3_class(a, "gpgam_anova")
  expect_equal(a$ELBO, c(logLik(fit)[[1]], logLik(both)[[1]]))
  expect_equal(a[["Delta ELBO"]][2], logLik(both)[[1]] - logLik(fit)[[1]])
  expect_equal(a$df, c(attr(logLik(fit), "df"), attr(logLik(both), "df")))
  expect_identical(rownames(a), c("fit", "both"))
  expect_warning(anova(fit, both, test = "Chisq"), "no 'test' argument")
  expect_error(anova(fit, gpgam(y ~ gp(x), data = d, control = ctl)), "location-scale \\(gaulss\\) fits")
  expect_error(anova(fit, sub), "different numbers of observations")
})
