# predict() conventions (after predict.lm / mgcv::predict.gam) and the
# data-handling arguments of gpgam().

pred_data <- function(n = 200, seed = 6) {
  set.seed(seed)
  d <- data.frame(x = runif(n), z = rnorm(n), f = factor(sample(letters[1:3], n, TRUE)), o = runif(n))
  d$y <- sin(5 * d$x) + 0.5 * d$z + c(a = 0, b = 0.5, c = -0.5)[as.character(d$f)] + rnorm(n, sd = 0.2)
  d
}

pred_ctl <- function(...) qctl(inducing = 10, iterations = 60, seed = 1, ...)

test_that("se.fit = TRUE returns fit, se.fit and residual.scale", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  nd <- d[1:7, ]
  p <- predict(fit, nd, se.fit = TRUE)
  expect_named(p, c("fit", "se.fit", "residual.scale"))
  expect_identical(p$fit, predict(fit, nd))
  expect_length(p$se.fit, 7)
  expect_true(all(p$se.fit > 0))
  expect_equal(p$residual.scale, sigma(fit))
  expect_identical(names(p$fit), rownames(nd))
  # Gaussian response: identity link, so response == link (mean and sd)
  pr <- predict(fit, nd, type = "response", se.fit = TRUE)
  expect_equal(pr$fit, p$fit, tolerance = 1e-12)
  expect_equal(pr$se.fit, p$se.fit, tolerance = 1e-12)
})

test_that("a choice argument out of its choices is an error naming the argument; abbreviations match", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  expect_error(predict(fit, d[1:3, ], type = "bogus"),
               "'type' must be one of \"link\", \"response\", \"terms\", \"iterms\", \"lpmatrix\", not \"bogus\"",
               fixed = TRUE)
  expect_error(predict(fit, d[1:3, ], interval = 2), "'interval' must be one of .*, not 2")
  expect_error(residuals(fit, type = "student"), "'type' must be one of \"deviance\"")
  expect_error(plot(fit, which = "fits"), "'which' must be one of \"terms\", \"trace\"")
  expect_identical(predict(fit, d[1:3, ], type = "resp"), predict(fit, d[1:3, ], type = "response"))
  expect_identical(residuals(fit, type = NULL), residuals(fit))  # (as match.arg(): the first choice)
})

test_that("type = 'terms' adds up to the link prediction", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  nd <- d[1:20, ]
  tt <- predict(fit, nd, type = "terms")
  expect_true(is.matrix(tt))
  expect_identical(colnames(tt), c("z", "f", "gp(x)"))
  # mgcv's order, the parametric terms first
  if (requireNamespace("mgcv", quietly = TRUE)) {
    b <- mgcv::gam(y ~ s(x) + z + f, data = d)
    expect_identical(sub("^gp", "s", colnames(tt)), colnames(predict(b, nd, type = "terms")))
  }
  expect_equal(nrow(tt), 20L)
  const <- attr(tt, "constant")
  expect_equal(const, unname(coef(fit)["(Intercept)"]))
  expect_close(rowSums(tt) + const, predict(fit, nd), 1e-8)
  # parametric columns are x * beta
  expect_close(tt[, "z"], nd$z * coef(fit)[["z"]], 1e-10)
  expect_close(tt[, "f"], (nd$f == "b") * coef(fit)[["fb"]] + (nd$f == "c") * coef(fit)[["fc"]], 1e-10)
  # se of a linear term: |z| * sd(beta_z)
  ts <- predict(fit, nd, type = "terms", se.fit = TRUE)
  expect_named(ts, c("fit", "se.fit"))
  expect_close(ts$se.fit[, "z"], abs(nd$z) * sqrt(vcov(fit)["z", "z"]), 1e-10)
  expect_equal(dim(ts$se.fit), dim(tt))

  # with an offset: rowSums + constant + offset
  fo <- gpgam(y ~ gp(x) + z + offset(o), data = d, control = pred_ctl())
  to <- predict(fo, nd, type = "terms")
  expect_identical(colnames(to), c("z", "gp(x)"))
  expect_close(rowSums(to) + attr(to, "constant") + nd$o, predict(fo, nd), 1e-8)

  # without an intercept the constant is 0
  f0 <- gpgam(y ~ gp(x) + z - 1, data = d, control = pred_ctl())
  t0 <- predict(f0, nd, type = "terms")
  expect_equal(attr(t0, "constant"), 0)
  expect_close(rowSums(t0), predict(f0, nd), 1e-8)
})

test_that("predict() without newdata is the fitted linear predictor", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  expect_close(predict(fit), fit$linear.predictors, 1e-12)
  expect_close(predict(fit), predict(fit, d), 1e-12)
  expect_close(fitted(fit), predict(fit, type = "response"), 1e-12)
  # binomial: fitted() is the response-scale mean, not the linear predictor
  d$yb <- as.numeric(d$y > 0)
  fb <- gpgam(yb ~ gp(x) + z, data = d, family = binomial(link = "probit"), control = pred_ctl())
  expect_close(fitted(fb), predict(fb, d, type = "response"), 1e-12)
  pl <- predict(fb, d, se.fit = TRUE)
  expect_close(fitted(fb), pnorm(pl$fit / sqrt(1 + pl$se.fit^2)), 1e-10)
})

test_that("rows of newdata with NA give NA and leave the other rows unchanged", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  nd <- d[1:6, ]
  ref <- predict(fit, nd, se.fit = TRUE)
  nd$x[2] <- NA
  nd$f[5] <- NA
  p <- predict(fit, nd, se.fit = TRUE)
  expect_length(p$fit, 6)
  expect_true(all(is.na(p$fit[c(2, 5)])))
  expect_true(all(is.na(p$se.fit[c(2, 5)])))
  expect_identical(p$fit[-c(2, 5)], ref$fit[-c(2, 5)])
  expect_identical(p$se.fit[-c(2, 5)], ref$se.fit[-c(2, 5)])
  tt <- predict(fit, nd, type = "terms")
  expect_true(all(is.na(tt[c(2, 5), ])))
  expect_false(anyNA(tt[-c(2, 5), ]))
})

test_that("newdata missing a column or with an unseen level is an error naming it", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  expect_error(predict(fit, d[, c("x", "f")]), "newdata.*'z'")
  expect_error(predict(fit, d[, c("z", "f")]), "newdata.*'x'")
  nd <- d[1:3, ]
  nd$f <- factor(c("a", "b", "zz"))
  expect_error(predict(fit, nd), "'zz'.*'f'")
  # a new level set that is a subset of the old ones is fine
  nd$f <- factor(c("a", "b", "b"))
  expect_close(predict(fit, nd), predict(fit, d[1:3, ] |> transform(f = factor(c("a", "b", "b"), levels = letters[1:3]))), 1e-12)
  # a factor given as text or numbers is read by its levels (as mgcv); it said "contrasts apply only to factors"
  nd$f <- c("a", "b", "b")
  expect_close(predict(fit, nd), predict(fit, transform(nd, f = factor(f, levels = letters[1:3]))), 1e-12)
  d$g <- factor(rep(1:3, length.out = nrow(d)))
  fg <- gpgam(y ~ gp(x) + g, data = d, control = pred_ctl())
  expect_close(predict(fg, data.frame(x = 0.5, g = 2)), predict(fg, data.frame(x = 0.5, g = factor(2, levels = 1:3))), 1e-12)
  expect_error(predict(fg, data.frame(x = 0.5, g = 4)), "'4' of factor 'g' not seen")
})

test_that("a new level of a random effect predicts the effect's prior: the one-way model's closed form", {
  # y_ij = b0 + b_i + e_ij, b_i ~ N(0, s2f), e ~ N(0, s2): a Gaussian fit of
  # factor and intercept terms only is exact, and at a new level the
  # prediction is b0's posterior, the weighted mean of the level means with
  # weights 1 / (s2f + s2 / n_i), and its variance 1 / sum(w) + s2f (up to
  # the intercept's vague prior, relative 1.4e-6 here)
  set.seed(31)
  ni <- c(2, 3, 5, 4, 6, 2, 3, 5)
  f <- factor(rep(sprintf("s%d", seq_along(ni)), ni))
  d <- data.frame(f = f, y = 3 + rnorm(length(ni), sd = 1.5)[f] + rnorm(length(f), sd = 0.7))
  fit <- gpgam(y ~ gp(f), data = d)
  s2f <- fit$params$gp[["gp(f)"]]$variance
  s2 <- sigma(fit)^2
  w <- 1 / (s2f + s2 / ni)
  nd <- data.frame(f = c("s1", "new", NA))
  expect_warning(p <- predict(fit, nd, se.fit = TRUE),
                 "level\\(s\\) 'new' of factor 'f' not seen when fitting: gp\\(f\\) predicts its prior there")
  expect_rel(p$fit[2], sum(w * tapply(d$y, d$f, mean)) / sum(w), 1e-5, "mean at a new level")
  expect_rel(p$se.fit[2]^2, 1 / sum(w) + s2f, 1e-5, "variance at a new level")
  expect_true(is.na(p$fit[3]))  # (NA stays NA)
  # the seen level is predicted as without the new one
  expect_close(p$fit[1], predict(fit, nd[1, , drop = FALSE]), 1e-12)
  # the lpmatrix agrees: the new level's features are the centring alone and
  # the effect's variance is all in "nonbasis.var"
  Xp <- suppressWarnings(predict(fit, nd[1:2, , drop = FALSE], type = "lpmatrix"))
  expect_rel(attr(Xp, "nonbasis.var")[2], s2f, 1e-12, "nonbasis.var at a new level")
  expect_close(attr(Xp, "nonbasis.var")[1], 0, 1e-12)
  expect_close(Xp %*% coef(fit, full = TRUE), p$fit[1:2], 1e-10)
  expect_rel(rowSums((Xp %*% vcov(fit, full = TRUE)) * Xp) + attr(Xp, "nonbasis.var"), p$se.fit[1:2]^2, 1e-8,
             "lpmatrix variance")
  # leaving the term out: no warning
  expect_no_warning(predict(fit, nd, exclude = "gp(f)"))
  # a factor that is also a parametric term or a by variable keeps the error
  d$x <- runif(nrow(d))
  d$g <- factor(rep(c("u", "v"), length.out = nrow(d)))
  fit2 <- gpgam(y ~ gp(f) + g, data = d, control = pred_ctl())
  expect_error(predict(fit2, data.frame(f = "new", g = "w")), "'w' of factor 'g' not seen")
  expect_warning(predict(fit2, data.frame(f = "new", g = "u")), "'new' of factor 'f'")
  fit3 <- suppressWarnings(gpgam(y ~ gp(x, by = f) + gp(f), data = d, control = pred_ctl()))
  expect_error(predict(fit3, data.frame(f = "new", x = 0.5)), "'new' of factor 'f' not seen when fitting$")
})

test_that("probit response predictions are probabilities", {
  set.seed(7)
  n <- 300
  d <- data.frame(x = runif(n, -2, 2))
  d$y <- rbinom(n, 1, pnorm(3 * sin(2 * d$x)))
  fit <- gpgam(y ~ gp(x), data = d, family = binomial(link = "probit"), control = pred_ctl())
  nd <- data.frame(x = seq(-3, 3, length.out = 50))  # also outside the data
  pr <- predict(fit, nd, type = "response", se.fit = TRUE)
  expect_true(all(pr$fit > 0 & pr$fit < 1))
  expect_true(all(pr$se.fit >= 0 & pr$se.fit <= 0.5))
  # strongly informative region: the probabilities follow the truth
  inside <- abs(nd$x) < 1.8
  expect_lt(max(abs(pr$fit[inside] - pnorm(3 * sin(2 * nd$x[inside])))), 0.25)
  # response sd is the sd of Phi(eta) under eta ~ N(fit, se^2)
  pl <- predict(fit, nd, se.fit = TRUE)
  i <- 10
  ref <- integrate(function(e) pnorm(e)^2 * dnorm(e, pl$fit[i], pl$se.fit[i]), -Inf, Inf)$value - pr$fit[i]^2
  expect_equal(unname(pr$se.fit[i]), unname(sqrt(ref)), tolerance = 1e-6)
})

test_that("na.exclude pads fitted() and residuals() with NA", {
  d <- pred_data()
  d$y[c(3, 10)] <- NA
  d$z[17] <- NA
  fit <- gpgam(y ~ gp(x) + z, data = d, control = pred_ctl(), na.action = na.exclude)
  expect_equal(nobs(fit), nrow(d) - 3L)
  expect_length(fitted(fit), nrow(d))
  expect_length(residuals(fit), nrow(d))
  expect_equal(which(is.na(fitted(fit))), c(3L, 10L, 17L), ignore_attr = TRUE)
  expect_equal(which(is.na(residuals(fit))), c(3L, 10L, 17L), ignore_attr = TRUE)
  expect_close(na.omit(residuals(fit)), na.omit(d$y - fitted(fit))[seq_len(nobs(fit))], 1e-12)
  # predict() without newdata: padded too, as predict.lm(); the kept rows are the fitted values
  p <- predict(fit, se.fit = TRUE)
  expect_length(p$fit, nrow(d))
  expect_equal(which(is.na(p$fit)), c(3L, 10L, 17L), ignore_attr = TRUE)
  expect_equal(which(is.na(p$se.fit)), c(3L, 10L, 17L), ignore_attr = TRUE)
  expect_close(na.omit(predict(fit, type = "response")), na.omit(fitted(fit)), 1e-12)
  tt <- predict(fit, type = "terms")
  expect_equal(dim(tt), c(nrow(d), 2L))
  expect_equal(which(is.na(tt[, "z"])), c(3L, 10L, 17L), ignore_attr = TRUE)
  expect_close(na.omit(rowSums(tt) + attr(tt, "constant")), na.omit(predict(fit)), 1e-10)
  expect_equal(dim(predict(fit, interval = "confidence")), c(nrow(d), 3L))
  # the lpmatrix (and model.matrix()) too, its attributes with it, as mgcv pads them
  Xp <- predict(fit, type = "lpmatrix")
  expect_equal(nrow(Xp), nrow(d))
  expect_identical(model.matrix(fit), Xp)
  expect_equal(which(is.na(Xp[, 1])), c(3L, 10L, 17L), ignore_attr = TRUE)
  expect_length(attr(Xp, "model.offset"), nrow(d))
  expect_close(na.omit(drop(Xp %*% coef(fit, full = TRUE)) + attr(Xp, "model.offset")), na.omit(predict(fit)), 1e-8)
  expect_equal(nrow(model.matrix(fit, newdata = d[1:4, ])), 4L)
  # plot() with partial residuals draws the fitting rows
  pdf(NULL)
  pp <- plot(fit, residuals = TRUE)
  dev.off()
  expect_length(pp[[1]]$p.resid, nobs(fit))
  expect_false(anyNA(pp[[1]]$p.resid))
  # na.omit (default) drops them
  fo <- gpgam(y ~ gp(x) + z, data = d, control = pred_ctl())
  expect_length(fitted(fo), nrow(d) - 3L)
  expect_close(fitted(fo), na.omit(fitted(fit)), 1e-12)
})

test_that("plot()'s partial residuals and anova() work with an offset() of a transformed variable", {
  # (the model frame holds offset(log(t)), not t: the terms are taken at the frame itself)
  d <- pred_data()
  d$t <- 1 + d$o
  d$k <- rpois(nrow(d), d$t * exp(0.5 * sin(5 * d$x)))
  fit <- gpgam(k ~ gp(x) + z + offset(log(t)), data = d, family = poisson(), control = pred_ctl())
  pdf(NULL)
  pp <- plot(fit, residuals = TRUE)
  dev.off()
  tt <- predict(fit, d, type = "terms")
  expect_close(pp[[1]]$p.resid, tt[, "gp(x)"] + residuals(fit, type = "working"), 1e-10)
  expect_identical(anova(fit)$term, c("z", "gp(x)"))  # (parametric first, as anova.gam())
})

test_that("update() refits with a changed formula", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  fit2 <- update(fit, . ~ . - z)
  expect_s3_class(fit2, "gpgam")
  expect_equal(deparse(formula(fit2)), "y ~ gp(x) + f")
  expect_named(coef(fit2), c("(Intercept)", "fb", "fc"))
  ref <- gpgam(y ~ gp(x) + f, data = d, control = pred_ctl())
  expect_identical(predict(fit2, d[1:5, ]), predict(ref, d[1:5, ]))
})

test_that("subset selects rows like lm()", {
  d <- pred_data()
  fs <- gpgam(y ~ gp(x) + z, data = d, subset = x > 0.3, control = pred_ctl())
  ref <- gpgam(y ~ gp(x) + z, data = d[d$x > 0.3, ], control = pred_ctl())
  expect_equal(nobs(fs), sum(d$x > 0.3))
  expect_identical(predict(fs, d[1:5, ]), predict(ref, d[1:5, ]))
  expect_identical(coef(fs), coef(ref))
})

test_that("Gaussian weights are precision weights", {
  d <- pred_data(n = 300)
  ctl <- qctl(inducing = 10, iterations = 400, seed = 1)
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = ctl)
  d$w2 <- 2
  fit_w2 <- gpgam(y ~ gp(x) + z + f, data = d, weights = w2, control = ctl)
  # weight 2 halves the noise variance of each observation: the unit-weight
  # sigma is sqrt(2) times larger and the fitted function is the same
  expect_equal(sigma(fit_w2), sigma(fit) * sqrt(2), tolerance = 0.05)
  expect_close(predict(fit_w2, d[1:20, ]), predict(fit, d[1:20, ]), 0.05)
})

test_that("binomial weights are numbers of trials", {
  set.seed(9)
  n <- 200
  d <- data.frame(x = runif(n))
  d$m <- as.numeric(sample(1:6, n, TRUE))
  d$k <- rbinom(n, d$m, plogis(2 * sin(4 * d$x)))
  d$p <- d$k / d$m
  # proportions with trial weights == the expanded 0/1 data (same likelihood
  # but for the binomial coefficients, which the counts' objective includes
  # and the 0/1 rows' are 1)
  ctl <- qctl(inducing = 8, iterations = 50, seed = 1, fixed = c("kernel", "inducing"))
  fp <- gpgam(p ~ gp(x, lengthscale = 0.3, variance = 2, inducing = seq(0, 1, length.out = 8)), data = d, weights = m, family = binomial(), control = ctl)
  long <- d[rep(seq_len(n), d$m), ]
  long$yb <- unlist(lapply(seq_len(n), function(i) rep(c(1, 0), c(d$k[i], d$m[i] - d$k[i]))))
  fl <- gpgam(yb ~ gp(x, lengthscale = 0.3, variance = 2, inducing = seq(0, 1, length.out = 8)), data = long, family = binomial(), control = ctl)
  nd <- data.frame(x = seq(0.05, 0.95, length.out = 10))
  expect_close(predict(fp, nd), predict(fl, nd), 1e-6)
  expect_close(fp$elbo - fl$elbo, sum(lchoose(d$m, d$k)), 1e-6)
  expect_close(logLik(fp) - logLik(fl), sum(lchoose(d$m, d$k)), 1e-6)
})

test_that("integer weights are accepted and equal double weights", {
  set.seed(9)
  n <- 100
  d <- data.frame(x = runif(n), m = sample(1:6, n, TRUE))
  d$y <- rbinom(n, d$m, plogis(2 * sin(4 * d$x))) / d$m
  expect_type(d$m, "integer")
  ctl <- qctl(inducing = 8, iterations = 20, seed = 1)
  f_dbl <- gpgam(y ~ gp(x), data = transform(d, m = as.numeric(m)), weights = m, family = binomial(), control = ctl)
  f_int <- gpgam(y ~ gp(x), data = d, weights = m, family = binomial(), control = ctl)
  expect_identical(predict(f_int, d[1:5, ]), predict(f_dbl, d[1:5, ]))
})

test_that("predict(na.action = ) follows model.frame: na.pass pads, na.omit drops", {
  d <- pred_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = pred_ctl())
  nd <- d[1:6, ]
  nd$x[2] <- NA
  nd$z[5] <- NA
  ref <- predict(fit, d[1:6, ])
  pp <- predict(fit, nd)
  po <- predict(fit, nd, na.action = na.omit)
  expect_length(pp, 6)
  expect_length(po, 4)
  expect_identical(names(po), rownames(nd)[-c(2, 5)])
  expect_identical(po, ref[-c(2, 5)])
  expect_error(predict(fit, nd, na.action = na.fail), "missing values")
})

test_that("predict(interval = ) gives lm's confidence and prediction intervals of a Gaussian fit", {
  set.seed(31)
  d <- data.frame(x = runif(150))
  d$y <- sin(5 * d$x) + rnorm(150, sd = 0.3)
  fit <- gpgam(y ~ gp(x), data = d, control = gp_control(inducing = 10, verbose = FALSE, seed = 1))
  nd <- data.frame(x = c(0.1, 0.5, 0.9))
  p <- predict(fit, nd, se.fit = TRUE)
  ci <- predict(fit, nd, interval = "confidence", level = 0.9)
  pi <- predict(fit, nd, interval = "prediction")
  expect_equal(colnames(ci), c("fit", "lwr", "upr"))
  expect_close(ci[, "upr"] - ci[, "fit"], qnorm(0.95) * p$se.fit, 1e-12)
  expect_close(pi[, "fit"] - pi[, "lwr"], qnorm(0.975) * sqrt(p$se.fit^2 + sigma(fit)^2), 1e-12)
  # the prediction interval covers about 95% of new observations
  nd2 <- data.frame(x = runif(4000))
  ynew <- sin(5 * nd2$x) + rnorm(4000, sd = 0.3)
  pi2 <- predict(fit, nd2, interval = "prediction")
  expect_equal(mean(ynew > pi2[, "lwr"] & ynew < pi2[, "upr"]), 0.95, tolerance = 0.02)
  db <- data.frame(x = d$x, y = rbinom(150, 1, 0.5))
  fb <- gpgam(y ~ gp(x), data = db, family = binomial(), control = gp_control(inducing = 8, verbose = FALSE))
  # (binomial: the probability's posterior interval; no prediction interval, see test-intervals.R)
  expect_error(predict(fb, nd, type = "response", interval = "prediction"), "'interval' = \"prediction\" is not given")
  expect_error(predict(fit, nd, interval = "confidence", level = 95), "'level'")
})

test_that("data-dependent bases (poly(), scale()) are evaluated at newdata with the fitting rows' coefficients", {
  set.seed(1)
  d <- data.frame(x = runif(200), z = rnorm(200))
  d$y <- sin(4 * d$x) + d$z - 0.5 * d$z^2 + rnorm(200, sd = 0.2)
  ctl <- gp_control(inducing = 10, verbose = FALSE, threads = 1)
  fit <- gpgam(y ~ gp(x) + poly(z, 2), data = d, control = ctl)
  # five rows re-fitted by poly() alone would give other columns (the bug this guards against)
  expect_close(predict(fit, d[1:5, ]), fitted(fit)[1:5], 1e-6)
  fit2 <- gpgam(y ~ gp(x) + scale(z) + I(z^2), data = d, control = ctl)
  expect_close(predict(fit2, d[c(3, 9), ]), fitted(fit2)[c(3, 9)], 1e-6)
  expect_close(predict(fit2, d[c(3, 9), ], type = "terms")[, "scale(z)"],
               predict(fit2, type = "terms")[c(3, 9), "scale(z)"], 1e-8)
})
