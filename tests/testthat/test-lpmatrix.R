# predict(type = "lpmatrix") with coef(full = TRUE) and vcov(full = TRUE):
# the matrix maps the weights' posterior to the link prediction and its
# variance (plus the variance the inducing points leave), for each engine
# with a whitened Gaussian posterior; engines without weights are refused.

lpm_data <- function(n = 150, seed = 11) {
  set.seed(seed)
  d <- data.frame(x = runif(n), x2 = runif(n), z = rnorm(n), f = factor(sample(c("a", "b", "c"), n, TRUE)),
                  o = runif(n, -0.2, 0.2))
  d$y <- sin(5 * d$x) + d$x2^2 + 0.5 * d$z + c(a = 0, b = 0.5, c = -0.5)[as.character(d$f)] + rnorm(n, sd = 0.2)
  d$yb <- rbinom(n, 1, pnorm(2 * sin(5 * d$x) + 0.5 * d$z))
  d$count <- rpois(n, exp(1 + sin(4 * d$x) + d$o))
  d
}

lpm_new <- function(n = 25, seed = 12) {
  d <- lpm_data(n, seed)
  d$x[1:3] <- c(-0.2, 1.3, 0.5)  # beyond the data, where the inducing points leave more variance
  d
}

lpm_ctl <- function(...) qctl(inducing = 8, iterations = 40, seed = 1, ...)

# The two identities of ?predict.gpgam, to 1e-8 per element.
check_lpmatrix <- function(fit, nd, label) {
  Xp <- predict(fit, nd, type = "lpmatrix")
  b <- coef(fit, full = TRUE)
  V <- vcov(fit, full = TRUE)
  expect_true(is.matrix(Xp))
  expect_identical(dim(Xp), c(nrow(nd), length(b)))
  expect_identical(colnames(Xp), names(b))
  expect_identical(dimnames(V), list(names(b), names(b)))
  expect_identical(rownames(Xp), rownames(nd))
  p <- predict(fit, nd, se.fit = TRUE)
  expect_rel(drop(Xp %*% b) + attr(Xp, "model.offset"), p$fit, 1e-8, paste(label, "mean"))
  nb <- attr(Xp, "nonbasis.var")
  expect_true(all(nb >= -1e-10 * p$se.fit^2), label = paste(label, "non-basis variance >= 0"))
  expect_rel(rowSums((Xp %*% V) * Xp) + nb, p$se.fit^2, 1e-8, paste(label, "variance"))
  # coef() and vcov() without full = TRUE are unchanged: the parametric block
  pn <- names(coef(fit))
  expect_identical(b[pn], coef(fit))
  expect_identical(V[pn, pn, drop = FALSE], vcov(fit))
  invisible(Xp)
}

test_that("vi, Gaussian: Xp maps coef(full = TRUE) and vcov(full = TRUE) to the link prediction and its se", {
  d <- lpm_data()
  nd <- lpm_new()
  fit <- gpgam(y ~ gp(x) + gp(x2) + z + f + offset(o), data = d, control = lpm_ctl())
  Xp <- check_lpmatrix(fit, nd, "vi gaussian")
  # mgcv's naming and order: the parametric model matrix, then each term's basis
  expect_identical(colnames(Xp), c("(Intercept)", "z", "fb", "fc", paste0("gp(x).", 1:8), paste0("gp(x2).", 1:8)))
  expect_identical(unname(Xp[, "z"]), nd$z)
  expect_identical(attr(Xp, "model.offset"), nd$o)
  # the data scale: the weights of a term times its columns are its "terms" prediction
  tt <- predict(fit, nd, type = "terms")
  g <- grep("^gp\\(x\\)\\.", colnames(Xp))
  expect_rel(Xp[, g] %*% coef(fit, full = TRUE)[g], tt[, "gp(x)"], 1e-8, "term gp(x)")
  # a term's centred columns average to zero over the data (the intercept carries the means)
  expect_lt(max(abs(colMeans(predict(fit, d, type = "lpmatrix")[, g]))), 1e-10)
  # without newdata: the data rows
  expect_identical(predict(fit, type = "lpmatrix"), predict(fit, d, type = "lpmatrix"))
  # the inducing points leave variance beyond the data, little within
  nb <- attr(Xp, "nonbasis.var")
  expect_gt(max(nb[1:2]), max(nb[-(1:2)]))
})

test_that("vi, Gaussian: factor-by curves, a random effect, no intercept and centre = FALSE", {
  d <- lpm_data()
  nd <- lpm_new()
  fb <- gpgam(y ~ gp(x, by = f) + f + z, data = d, control = lpm_ctl())
  Xb <- check_lpmatrix(fb, nd, "by = f")
  expect_identical(colnames(Xb)[1:4], c("(Intercept)", "fb", "fc", "z"))
  fr <- gpgam(y ~ gp(x) + gp(f) + z, data = d, control = lpm_ctl())
  Xr <- check_lpmatrix(fr, nd, "random effect")
  expect_identical(grep("^gp\\(f\\)", colnames(Xr), value = TRUE), paste0("gp(f).", 1:3))
  f0 <- gpgam(y ~ gp(x) + z - 1, data = d, control = lpm_ctl())
  X0 <- check_lpmatrix(f0, nd, "no intercept")
  expect_identical(colnames(X0)[1], "z")
  fu <- gpgam(y ~ gp(x, centre = FALSE) + gp(x2) + z, data = d, control = lpm_ctl())
  check_lpmatrix(fu, nd, "centre = FALSE")
  fc <- gpgam(y ~ gp(x, centre = TRUE) + z, data = d, control = lpm_ctl())
  check_lpmatrix(fc, nd, "centre = TRUE")
})

test_that("vi, binomial and Poisson: the link prediction and its se", {
  d <- lpm_data()
  nd <- lpm_new()
  fb <- gpgam(yb ~ gp(x) + z, data = d, family = binomial(link = "probit"), control = lpm_ctl())
  check_lpmatrix(fb, nd, "vi binomial")
  fl <- gpgam(yb ~ gp(x) + z, data = d, family = binomial(), control = lpm_ctl())
  check_lpmatrix(fl, nd, "vi logit")
  fp <- gpgam(count ~ gp(x) + offset(o), data = d, family = poisson(), control = lpm_ctl())
  check_lpmatrix(fp, nd, "vi poisson")
})

test_that("ep and decoupled: the link prediction and its se", {
  d <- lpm_data()
  nd <- lpm_new()
  fe <- gpgam(yb ~ gp(x, x2) + z, data = d, family = binomial(link = "probit"), inference = "ep",
              control = lpm_ctl())
  Xe <- check_lpmatrix(fe, nd, "ep")
  expect_identical(colnames(Xe), c("(Intercept)", "z", paste0("gp(x, x2).", 1:8)))
  fd <- gpgam(y ~ gp(x, x2) + z, data = d, inference = "decoupled", control = lpm_ctl(mean_basis = 30))
  Xd <- check_lpmatrix(fd, nd, "decoupled")
  # the mean bases: one column of weight 1 and variance 0
  expect_identical(tail(colnames(Xd), 1), "gp(x, x2).mean")
  expect_identical(coef(fd, full = TRUE)[["gp(x, x2).mean"]], 1)
  expect_true(all(vcov(fd, full = TRUE)["gp(x, x2).mean", ] == 0))
  expect_gt(sd(Xd[, "gp(x, x2).mean"]), 0)
  fu <- gpgam(y ~ gp(x, x2, centre = FALSE) + z, data = d, inference = "decoupled",
              control = lpm_ctl(mean_basis = 30))
  check_lpmatrix(fu, nd, "decoupled, centre = FALSE")
})

test_that("rows with missing values are NA rows; the others are unchanged", {
  d <- lpm_data()
  nd <- lpm_new(6)
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = lpm_ctl())
  ref <- predict(fit, nd, type = "lpmatrix")
  nd$x[2] <- NA
  nd$f[5] <- NA
  Xp <- predict(fit, nd, type = "lpmatrix")
  expect_true(all(is.na(Xp[c(2, 5), ])))
  expect_true(all(is.na(attr(Xp, "nonbasis.var")[c(2, 5)])))
  expect_identical(Xp[-c(2, 5), ], ref[-c(2, 5), ])
})

test_that("bad input: se.fit, terms, interval with lpmatrix; engines without weights", {
  d <- lpm_data()
  fit <- gpgam(y ~ gp(x) + z, data = d, control = lpm_ctl())
  expect_error(predict(fit, d[1:3, ], type = "lpmatrix", se.fit = TRUE),
               "'se.fit' must be FALSE with type = \"lpmatrix\".*vcov\\(fit, full = TRUE\\)")
  expect_error(predict(fit, d[1:3, ], type = "lpmatrix", terms = "gp(x)"), "'terms' is for type = \"terms\"")
  expect_error(predict(fit, d[1:3, ], type = "lpmatrix", interval = "confidence"), "'interval' is for type")
  expect_error(coef(fit, full = NA), "'full' must be TRUE or FALSE")
  fq <- gpgam(y ~ gp(x) + z, data = d, inference = "qsgp", control = qctl(iterations = 20, seed = 1))
  expect_error(predict(fq, d[1:3, ], type = "lpmatrix"), "lpmatrix.*not available for inference = \"qsgp\"")
  expect_error(coef(fq, full = TRUE), "inference = \"qsgp\"")
  expect_error(vcov(fq, full = TRUE), "inference = \"qsgp\"")
  expect_length(coef(fq), 2L)  # (the parametric coefficients as before)
  # an engine registered from outside with its own posterior and no weight_posterior() method
  scalegp::register_engine("rff", rff_engine, methods = rff_methods)
  on.exit(scalegp::register_engine("rff", NULL))
  fr <- gpgam(y ~ gp(x) + z, data = d, inference = "rff", control = gp_control(features = 10, seed = 3, verbose = FALSE))
  expect_error(predict(fr, d[1:3, ], type = "lpmatrix"), "not available for inference = \"rff\", the random Fourier features")
})

test_that("predict(exclude = ) leaves terms out of the mean and, jointly, out of the standard errors", {
  d <- lpm_data()
  nd <- lpm_new()
  # without an intercept, excluding one gp() term leaves the other, whose
  # mean and sd type = "terms" computes by its own route
  f0 <- gpgam(y ~ 0 + gp(x) + gp(x2), data = d, control = lpm_ctl())
  q <- predict(f0, nd, exclude = "gp(x2)", se.fit = TRUE)
  tq <- predict(f0, nd, type = "terms", se.fit = TRUE)
  expect_close(q$fit, tq$fit[, "gp(x)"], 1e-10)
  expect_rel(q$se.fit, tq$se.fit[, "gp(x)"], 1e-8, "se of the one term left")
  # with a factor and a parametric term: the mean is the full one minus the
  # terms'; the sd is that of the lpmatrix with their columns set to 0
  fit <- gpgam(y ~ gp(x) + gp(f) + z, data = d, control = lpm_ctl())
  p0 <- predict(fit, nd)
  tt <- predict(fit, nd, type = "terms")
  p1 <- predict(fit, nd, exclude = c("gp(f)", "z"), se.fit = TRUE)
  expect_close(p1$fit, p0 - tt[, "gp(f)"] - tt[, "z"], 1e-10)
  X <- predict(fit, nd, type = "lpmatrix", exclude = c("gp(f)", "z"))
  expect_true(all(X[, c("z", grep("^gp\\(f\\)\\.", colnames(X), value = TRUE))] == 0))
  expect_close(drop(X %*% coef(fit, full = TRUE)) + attr(X, "model.offset"), p1$fit, 1e-10)
  V <- vcov(fit, full = TRUE)
  expect_rel(p1$se.fit, sqrt(rowSums((X %*% V) * X) + attr(X, "nonbasis.var")), 1e-10, "se from the lpmatrix")
  expect_true(all(p1$se.fit < predict(fit, nd, se.fit = TRUE)$se.fit))
  # one row of newdata: the same numbers as that row among many
  p2 <- predict(fit, nd[2, ], exclude = c("gp(f)", "z"), se.fit = TRUE)
  expect_close(p2$fit, p1$fit[2], 1e-12)
  expect_rel(p2$se.fit, p1$se.fit[2], 1e-10, "se of one row")
  X2 <- predict(fit, nd[2, ], type = "lpmatrix", exclude = c("gp(f)", "z"))
  expect_close(X2[1, ], X[2, ], 1e-12)
  expect_identical(colnames(predict(fit, nd, type = "terms", exclude = "gp(f)")), c("z", "gp(x)"))
  r <- predict(fit, nd, type = "response", exclude = "gp(f)")
  expect_close(r, predict(fit, nd, exclude = "gp(f)"), 1e-12)
  expect_error(predict(fit, nd, exclude = "gp(x3)"), "'exclude' must be labels of the fit's terms")
  nd$f <- as.character(nd$f)
  nd$f[1] <- "new"
  # a new level: the effect's prior (a warning), and nothing of it once the term is excluded
  expect_warning(pn <- predict(fit, nd), "level\\(s\\) 'new' of factor 'f' not seen.*exclude = \"gp\\(f\\)\"")
  expect_close(pn[-1], p0[-1], 1e-12)
  expect_no_warning(pe <- predict(fit, nd, exclude = c("gp(f)", "z"), se.fit = TRUE))
  expect_close(pe$fit, p1$fit, 1e-10)
  expect_close(pe$se.fit, p1$se.fit, 1e-10)
  scalegp::register_engine("rff", rff_engine, methods = rff_methods)
  on.exit(scalegp::register_engine("rff", NULL))
  fr <- gpgam(y ~ gp(x) + z, data = d, inference = "rff", control = gp_control(features = 10, seed = 3, verbose = FALSE))
  expect_error(predict(fr, nd, exclude = "z", se.fit = TRUE), "'exclude' with standard errors.*\"rff\"")
  expect_length(predict(fr, nd, exclude = "z"), nrow(nd))
})
