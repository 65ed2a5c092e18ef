# print / summary / logLik / nobs / sigma / coef / vcov / family / formula /
# residuals and plot methods.

meth_data <- function(n = 150) {
  set.seed(8)
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n), z = rnorm(n))
  d$y <- sin(4 * d$x1) + d$x2 + d$z + rnorm(n, sd = 0.2)
  d
}

meth_ctl <- function(...) qctl(inducing = 10, iterations = 30, seed = 1, ...)

test_that("print() and summary() show the hyperparameters and coefficients", {
  d <- meth_data()
  fit <- gpgam(y ~ gp(x1, x2) + z, data = d, control = meth_ctl())
  g <- fit$params$gp[[1]]
  out <- paste(capture.output(print(fit)), collapse = "\n")
  expect_match(out, "gp\\(x1, x2\\): matern52 kernel, 10 inducing points")
  expect_match(out, format(g$variance, digits = 4), fixed = TRUE)
  expect_match(out, format(sigma(fit), digits = 4), fixed = TRUE)
  s <- summary(fit)
  expect_s3_class(s, "summary.gpgam")
  expect_equal(s$terms$term, "gp(x1, x2)")
  expect_equal(s$terms$variance, g$variance)
  expect_equal(s$terms$lengthscale, paste(vapply(g$lengthscale, format, "", digits = 4), collapse = ", "))
  expect_equal(unname(s$s.table[, "edf"]), g$edf)
  a <- anova(fit)
  # parametric terms first, then gp() terms, as mgcv's anova.gam()
  expect_identical(a$term, c("z", "gp(x1, x2)"))
  expect_equal(s$terms$share, a$share[2])
  # the tests of anova() are summary()'s (gp() terms) and Wald tests b' V^-1 b (parametric terms)
  expect_equal(unname(a[2, c("Ref.df", "Chi.sq", "p-value")]), unname(as.data.frame(s$s.table)[1, c("Ref.df", "Chi.sq", "p-value")]),
               ignore_attr = TRUE)
  expect_equal(a$F[a$term == "z"], unname(s$coefficients["z", "t value"])^2, tolerance = 1e-12)
  expect_true(is.na(a$Chi.sq[a$term == "z"]))
  expect_equal(a$Ref.df[a$term == "z"], 1)
  # Gaussian (dispersion estimated): t on the residual df, as mgcv's; anova's F(1, df) is t^2
  rdf <- df.residual(fit)
  expect_gt(rdf, 100)
  expect_equal(unname(s$coefficients[, "Pr(>|t|)"]), unname(2 * pt(-abs(s$coefficients[, "t value"]), rdf)),
               tolerance = 1e-12)
  expect_equal(a[["p-value"]][a$term == "z"], unname(s$coefficients["z", "Pr(>|t|)"]), tolerance = 1e-10)
  expect_match(paste(capture.output(print(a)), collapse = "\n"), "with approximate tests")
  expect_equal(s$coefficients[, "Estimate"], coef(fit))
  expect_equal(s$coefficients[, "Std. Error"], sqrt(diag(vcov(fit))))
  expect_equal(unname(s$coefficients[, "t value"]), unname(coef(fit) / sqrt(diag(vcov(fit)))))
  expect_equal(s$objective, fit$elbo)
  expect_equal(s$sigma, sigma(fit))
  so <- paste(capture.output(print(s)), collapse = "\n")
  expect_match(so, "Gaussian-process hyperparameters")
  expect_match(so, "lengthscale", fixed = TRUE)
  expect_match(so, format(g$lengthscale[["x2"]], digits = 4), fixed = TRUE)
  expect_match(so, "Residual sd")
  expect_match(so, paste(fit$iterations, "iterations"))
  expect_match(so, if (fit$converged) "converged to a stationary point" else "NOT converged")
  # a binomial fit prints without a residual sd
  d$yb <- as.numeric(d$y > 0.5)
  fb <- gpgam(yb ~ gp(x1), data = d, family = binomial(link = "probit"), control = meth_ctl())
  ob <- paste(capture.output(print(summary(fb))), collapse = "\n")
  expect_match(ob, "Link function: probit")
  expect_false(grepl("Residual sd", ob))
  # no dispersion estimated: z and the normal p-value
  cb <- summary(fb)$coefficients
  expect_equal(colnames(cb), c("Estimate", "Std. Error", "z value", "Pr(>|z|)"))
  expect_equal(unname(cb[, 4]), unname(2 * pnorm(-abs(cb[, 3]))), tolerance = 1e-12)
  # print methods of the helpers
  expect_output(print(gp(x1, x2, kernel = "matern32", k = 7)), "gp\\(x1, x2\\): matern32 kernel, ARD, k = 7")
  expect_output(print(gp_control(iterations = 3, verbose = FALSE)), "<gp_control>")
})

test_that("logLik() is the ELBO with a df attribute", {
  d <- meth_data()
  fit <- gpgam(y ~ gp(x1, x2, x3) + z, data = d, control = meth_ctl())
  ll <- logLik(fit)
  expect_s3_class(ll, "logLik")
  expect_equal(as.numeric(ll), fit$elbo)
  # variance + 3 lengthscales + 2 coefficients + sigma
  expect_equal(attr(ll, "df"), 7)
  expect_equal(attr(ll, "nobs"), 150L)
  expect_error(AIC(fit), "not defined")  # the ELBO is not a maximised log-likelihood
  # isotropic kernel: one lengthscale
  fi <- gpgam(y ~ gp(x1, x2, ard = FALSE), data = d, control = meth_ctl())
  expect_equal(attr(logLik(fi), "df"), 2 + 1 + 1)
  expect_length(fi$params$gp[[1]]$lengthscale, 1)
  # the optimisation improved the objective
  expect_gt(fit$elbo, fit$trace[1])
})

test_that("nobs, sigma, coef, vcov, family and formula", {
  d <- meth_data()
  fit <- gpgam(y ~ gp(x1) + z + x2, data = d, control = meth_ctl())
  expect_equal(nobs(fit), 150L)
  expect_gt(sigma(fit), 0)
  # the noise sd is in the right range for data simulated with sd 0.2
  fit_long <- gpgam(y ~ gp(x1) + z + x2, data = d, control = qctl(inducing = 10, iterations = 500, seed = 1))
  expect_gt(sigma(fit_long), 0.15)
  expect_lt(sigma(fit_long), 0.3)
  expect_equal(unname(coef(fit_long)[c("z", "x2")]), c(1, 1), tolerance = 0.15)
  expect_named(coef(fit), c("(Intercept)", "z", "x2"))
  V <- vcov(fit)
  expect_equal(dimnames(V), list(names(coef(fit)), names(coef(fit))))
  expect_true(isSymmetric(V))
  expect_true(all(eigen(V, only.values = TRUE)$values > 0))
  expect_equal(family(fit)$family, "gaussian")
  expect_equal(formula(fit), y ~ gp(x1) + z + x2)
  # terms(): a terms object with every variable, as terms.gam(); model.matrix(): the lpmatrix
  expect_s3_class(terms(fit), "terms")
  expect_setequal(all.vars(terms(fit)), c("y", "x1", "z", "x2"))
  expect_equal(attr(terms(fit), "response"), 1L)
  fnm <- gpgam(y ~ gp(x1) + z + x2, data = d, control = meth_ctl(), model = FALSE)
  expect_identical(terms(fnm), terms(fit))
  # model.frame(): the stored frame; after model = FALSE the same frame rebuilt from the call
  expect_identical(model.frame(fit), fit$model)
  expect_equal(model.frame(fnm), fit$model)
  expect_error(model.frame(fit, data = d), "'data'.*terms\\(fit\\)")
  expect_equal(model.matrix(fit), predict(fit, type = "lpmatrix"))
  expect_equal(dim(model.matrix(fit)), c(150L, length(coef(fit, full = TRUE))))
  # nobs() counts rows with a non-zero weight, as nobs.glm(); logLik()'s nobs too
  w <- rep(1, 150)
  w[1:10] <- 0
  fw <- gpgam(y ~ gp(x1) + z + x2, data = d, weights = w, control = meth_ctl())
  expect_equal(nobs(fw), 140L)
  # Pearson residuals of rows of weight 0 are 0, as glm's and mgcv's
  expect_identical(unname(residuals(fw, "pearson")[1:10]), rep(0, 10))
  expect_equal(unname(residuals(fw, "pearson")[11:150]), unname(residuals(fw, "response")[11:150]), tolerance = 1e-14)
  expect_equal(attr(logLik(fw), "nobs"), 140L)
  # rows of weight 0 add nothing: logLik() and df.residual() as the fit without
  # them (the same model up to where the fit puts its inducing points; the
  # log-Jacobian of the response scaling counted them: 10 log(scale), 2.1 here)
  fs <- gpgam(y ~ gp(x1) + z + x2, data = d[11:150, ], control = meth_ctl())
  expect_lt(abs(as.numeric(logLik(fw) - logLik(fs))), 0.1)
  expect_equal(df.residual(fw), 140 - sum(vapply(fw$params$gp, `[[`, 1, "edf")) - 3, tolerance = 1e-12)
  expect_lt(abs(df.residual(fw) - df.residual(fs)), 0.5)
  d$yb <- as.numeric(d$y > 0.5)
  fb <- gpgam(yb ~ gp(x1), data = d, family = binomial(), control = meth_ctl())
  expect_equal(family(fb)$link, "logit")
  expect_equal(sigma(fb), 1)
  # Pearson residuals: (y - mu) / sqrt(mu (1 - mu))
  mu <- fitted(fb)
  expect_close(residuals(fb, type = "pearson"), (d$yb - mu) / sqrt(mu * (1 - mu)), 1e-12)
  expect_close(residuals(fb, type = "response"), d$yb - mu, 1e-12)
  # deviance residuals (the default, as for glm): signed roots of the binomial deviance
  dev <- -2 * (d$yb * log(mu) + (1 - d$yb) * log(1 - mu))
  expect_close(residuals(fb), sign(d$yb - mu) * sqrt(dev), 1e-10)
  expect_close(sum(residuals(fb)^2), sum(binomial()$dev.resids(d$yb, mu, rep(1, nrow(d)))), 1e-8)
  # working residuals: (y - mu) / (d mu / d eta)
  expect_close(residuals(fb, "working"), (d$yb - plogis(fb$linear.predictors)) / binomial()$mu.eta(fb$linear.predictors),
               1e-10)
  # Pearson residuals of a Gaussian model, as glm()'s: y - fitted times sqrt(weight), not over sigma
  expect_close(residuals(fit, "pearson"), residuals(fit), 1e-12)
  # a gp()-only model without intercept has no coefficients
  f0 <- gpgam(y ~ gp(x1) - 1, data = d, control = meth_ctl())
  expect_length(coef(f0), 0)
  expect_equal(dim(vcov(f0)), c(0L, 0L))
})

test_that("plot() draws 1-D, 2-D and 3-D gp terms and the trace", {
  d <- meth_data()
  f1 <- gpgam(y ~ gp(x1) + z, data = d, control = meth_ctl())
  f2 <- gpgam(y ~ gp(x1, x2), data = d, control = meth_ctl())
  f3 <- gpgam(y ~ gp(x1, x2, x3) + z, data = d, control = meth_ctl())
  fn <- gpgam(y ~ z, data = d, control = meth_ctl())
  png(tf <- tempfile(fileext = ".png"))
  on.exit(unlink(tf), add = TRUE)
  expect_length(plot(f1), 1)
  expect_length(plot(f2, n = 20), 1)
  expect_length(plot(f3, n = 20), 3)  # a slice per input
  expect_identical(plot(f3, which = "trace"), f3)
  expect_message(plot(fn), "no terms to plot")
  expect_error(plot(f1, select = 2), "'select'")
  dev.off()
  expect_gt(file.size(tf), 1000)
  # the 1-D term curve is the term prediction (GP component without intercept)
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  g <- f1$terms$gp[[1]]
  grid <- seq(g$range[1, 1], g$range[2, 1], length.out = 7)
  tp <- scalegp:::term_grid_predict(f1, 1, matrix(grid))
  tt <- predict(f1, data.frame(x1 = grid, z = 0), type = "terms", se.fit = TRUE)
  expect_close(tp$fit, tt$fit[, "gp(x1)"], 1e-10)
  expect_close(tp$se, tt$se.fit[, "gp(x1)"], 1e-10)
})

test_that("s() in a formula is read as gp(), and epochs sets the iterations", {
  d <- meth_data()
  fg <- gpgam(y ~ gp(x1) + z, data = d, control = meth_ctl())
  fs <- gpgam(y ~ s(x1) + z, data = d, control = meth_ctl())
  expect_identical(predict(fs, d[1:5, ]), predict(fg, d[1:5, ]))
  expect_warning(gpgam(y ~ s(x1, bs = "cr") + z, data = d, control = meth_ctl()), "'bs' is ignored")
  # epochs: iterations = ceiling(epochs * n / batch_size)
  fe <- gpgam(y ~ gp(x1), data = d, control = qctl(inducing = 5, epochs = 2.5, batch_size = 40, patience = 100, seed = 1))
  expect_equal(fe$control$iterations, as.integer(ceiling(2.5 * 150 / 40)))
  expect_equal(fe$iterations, 10L)
  expect_length(fe$trace, 10L)
  # batch_size above n is reduced to n
  fb <- gpgam(y ~ gp(x1), data = d, control = qctl(inducing = 5, iterations = 3, batch_size = 1000, seed = 1))
  expect_equal(fb$control$batch_size, 150L)
})

test_that("verbose = TRUE works for fits that stop before their iteration limit", {
  # (every converged fit; the decoupled engine draws a bar for its pilot fit too)
  d <- meth_data()
  for (inference in c("vi", "decoupled")) {
    out <- capture.output(fit <- suppressMessages(
      gpgam(y ~ gp(x1), data = d, inference = inference,
            control = gp_control(inducing = 5, iterations = 500, verbose = TRUE, seed = 1))))
    expect_s3_class(fit, paste0("gpgam_", inference))
    expect_lt(fit$iterations, 500)
    expect_match(out[length(out)], paste0("Done: ", fit$iterations, " iterations"), info = inference)
  }
})

test_that("verbose = TRUE draws a progress bar that is updated and closed", {
  d <- meth_data()
  for (inference in c("vi", "ep")) {
    dd <- d
    dd$y <- if (inference == "ep") as.numeric(d$y > 0.5) else d$y
    fam <- if (inference == "ep") binomial("probit") else gaussian()
    out <- capture.output(fit <- gpgam(y ~ gp(x1), data = dd, family = fam, inference = inference,
                                       control = gp_control(inducing = 5, iterations = 30, patience = 30,
                                                            verbose = TRUE, seed = 1)))
    out <- paste(out, collapse = "\n")
    expect_s3_class(fit, paste0("gpgam_", inference))
    expect_match(out, "\r| iteration 1 (at most 30) | ", fixed = TRUE, info = inference)
    expect_match(out, paste0("\rDone: ", fit$iterations, " iteration"), info = inference)
    expect_false(grepl("\033", out, fixed = TRUE), info = inference)
  }
  # a fit that fails before its first iteration draws no bar and leaves R usable
  out <- capture.output(expect_error(gpgam(y ~ gp(x1), data = d, family = poisson(),
                                           control = gp_control(verbose = TRUE)), "'y'"))
  expect_false(any(grepl("iteration|Done", out)))
})

test_that("family() and the printed link for every supported family", {
  d <- meth_data()
  d$yb <- as.numeric(d$y > 0.5)
  d$yc <- rpois(nrow(d), exp(d$x1))
  fp <- gpgam(yb ~ gp(x1), data = d, family = binomial("probit"), control = meth_ctl())
  fc <- gpgam(yc ~ gp(x1), data = d, family = poisson(), control = meth_ctl())
  expect_equal(family(fp)$family, "binomial")
  expect_equal(family(fp)$link, "probit")
  expect_equal(family(fc)$family, "poisson")
  expect_equal(family(fc)$link, "log")
  expect_output(print(fc), "poisson \\(log\\)")
  expect_output(print(fp), "binomial \\(probit\\)")
  # the family may also be given by name or as a function
  fn <- gpgam(yc ~ gp(x1), data = d, family = "poisson", control = meth_ctl())
  expect_identical(predict(fn, d[1:4, ]), predict(fc, d[1:4, ]))
  ff <- gpgam(yc ~ gp(x1), data = d, family = poisson, control = meth_ctl())
  expect_identical(predict(ff, d[1:4, ]), predict(fc, d[1:4, ]))
})

test_that("every fit has the engine-neutral class and methods", {
  d <- meth_data()
  fit <- gpgam(y ~ gp(x1) + z, data = d, control = meth_ctl())
  expect_s3_class(fit, c("gpgam_vi", "gpgam", "scalegp"), exact = TRUE)
  expect_equal(fit$engine$name, "vi")
  expect_equal(fit$engine$objective, "ELBO")
  expect_equal(fit$objective, fit$elbo)
  expect_equal(length(fit$gradient), length(fit$trace) * 0 + sum(nchar(names(fit$gradient)) > 0))
  expect_true(any(grepl("gp\\(x1\\): log lengthscale", names(fit$gradient))))
  expect_equal(names(fit$gradient)[length(fit$gradient)], "log noise variance")
  # the "scalegp" methods serve a fit whose class is only "scalegp"
  bare <- fit
  class(bare) <- "scalegp"
  expect_equal(as.numeric(logLik(bare)), fit$objective)
  expect_equal(nobs(bare), nobs(fit))
  expect_output(print(bare), "ELBO")
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  expect_identical(plot(bare), bare)
})

test_that("deviance(), df.residual(), AIC(fit1, fit2), anova() refusals and predict(terms =) as mgcv users expect", {
  set.seed(21)
  n <- 200
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$y <- rbinom(n, 1, plogis(2 * sin(5 * d$x1)))
  ctl <- gp_control(inducing = 10, verbose = FALSE, seed = 1)
  fit <- gpgam(y ~ gp(x1) + gp(x2), data = d, family = binomial(), control = ctl)
  mu <- fitted(fit)
  expect_equal(deviance(fit), -2 * sum(d$y * log(mu) + (1 - d$y) * log(1 - mu)), tolerance = 1e-12)
  expect_equal(df.residual(fit), n - sum(summary(fit)$s.table[, "edf"]) - 1, tolerance = 1e-12)
  expect_error(AIC(fit, fit), "instead of AIC\\(fit1, fit2\\) use anova\\(fit1, fit2\\)")
  fit1 <- gpgam(y ~ gp(x1), data = d, family = binomial(), control = ctl)
  expect_warning(a <- anova(fit1, fit, test = "Chisq"), "no 'test' argument")
  expect_equal(rownames(a), c("fit1", "fit"))
  fp <- gpgam(y ~ gp(x1), data = d, family = binomial("probit"), control = ctl)
  expect_error(anova(fit1, fp), "different families")
  fe <- gpgam(y ~ gp(x1), data = d, family = binomial("probit"), inference = "ep", control = ctl)
  expect_warning(anova(fp, fe), "different objectives")
  d2 <- d
  d2$y <- rev(d$y)
  expect_error(anova(fit1, gpgam(y ~ gp(x1), data = d2, family = binomial(), control = ctl)), "different responses")
  all <- predict(fit, d[1:4, ], type = "terms", se.fit = TRUE)
  two <- predict(fit, d[1:4, ], type = "terms", se.fit = TRUE, terms = "gp(x2)")
  expect_identical(two$fit[, "gp(x2)"], all$fit[, "gp(x2)"])
  expect_identical(two$se.fit[, "gp(x2)"], all$se.fit[, "gp(x2)"])
  expect_equal(attr(two$fit, "constant"), attr(all$fit, "constant"))
  expect_error(predict(fit, d[1:4, ], type = "terms", terms = "s(x3)"), "'terms' must be labels")
  # plot.gam's arguments; the label carries the edf
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  p <- plot(fit, ylim = c(-5, 5), xlab = "input", ylab = "effect", main = "m", col = "red", seWithMean = TRUE,
            shift = 1, trans = plogis)
  expect_equal(p[[1]]$label, "gp(x1)")
  expect_match(plot(fit)[[1]]$ylab, "^gp\\(x1,[0-9.]+\\)$")
  expect_gt(p[[1]]$se[1], plot(fit)[[1]]$se[1])
  expect_error(plot(fit, trans = "exp"), "'trans'")
})

test_that("maps of terms over two inputs share one colour scale, symmetric about zero", {
  set.seed(4)
  n <- 300
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n), x4 = runif(n))
  d$y <- 2 * sin(3 * d$x1) * cos(3 * d$x2) + rnorm(n, sd = 0.3)
  fit <- gpgam(y ~ gp(x1, x2) + gp(x3, x4), data = d, control = gp_control(inducing = 16, verbose = FALSE, seed = 1))
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  p <- plot(fit)
  expect_equal(p[[1]]$zlim, p[[2]]$zlim)
  expect_equal(p[[1]]$zlim[1], -p[[1]]$zlim[2])
  expect_equal(p[[1]]$zlim[2], max(abs(p[[1]]$fit), abs(p[[2]]$fit), na.rm = TRUE))
  q <- plot(fit, scale = 0)
  expect_lt(q[[2]]$zlim[2], q[[1]]$zlim[2])
})

test_that("calibration_check(): the intercept's equation holds at a fit's stationary point, and a gap warns", {
  # at a stationary point of the ELBO, sum w (y - mu) = 0 for the canonical
  # links (mu the posterior mean response): binomial proportions with trials
  # as weights, and Poisson counts with an offset
  set.seed(4)
  n <- 300
  d <- data.frame(x = runif(n), m = sample(1:10, n, TRUE), e = runif(n, 1, 3))
  d$s <- rbinom(n, d$m, plogis(sin(6 * d$x)))
  d$c <- rpois(n, d$e * exp(sin(6 * d$x)))
  fb <- gpgam(cbind(s, m - s) ~ gp(x), data = d, family = binomial(), control = qctl(seed = 1))
  fp <- gpgam(c ~ gp(x) + offset(log(e)), data = d, family = poisson(), control = qctl(seed = 1))
  for (f in list(fb, fp)) {
    w <- f$prior.weights
    v <- if (f$likelihood == "poisson") fitted(f) else fitted(f) * (1 - fitted(f))
    z <- sum(w * (f$y - fitted(f))) / sqrt(sum(w * v))
    expect_lt(abs(z), 1e-3)
    expect_equal(scalegp:::calibration_check(f), z, tolerance = 1e-12)
  }
  # rates pulled down by a third (as a biased bound would): a warning with the numbers
  fp$fitted.values <- fitted(fp) * 2 / 3
  expect_warning(z <- scalegp:::calibration_check(fp), "fitted mean rate .* is below the data's")
  expect_gt(z, 4)
  # not for a Gaussian fit
  expect_true(is.na(scalegp:::calibration_check(gpgam(c ~ gp(x), data = d, control = qctl(seed = 1)))))
})
