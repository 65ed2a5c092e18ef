# What an mgcv user types: te(), ti(), by = (numeric and factor), y ~ .,
# offset =, cbind(successes, failures), and mgcv's arguments gp() ignores.

syn_data <- function(n = 600, seed = 2) {
  set.seed(seed)
  d <- data.frame(x1 = runif(n), x2 = runif(n), z = runif(n, 0.5, 2),
                  g = factor(sample(c("a", "b", "c"), n, TRUE)), o = runif(n))
  d$y <- sin(2 * pi * d$x1) + cos(3 * d$x2) + rnorm(n, sd = 0.2)
  d
}
syn_ctl <- function(...) qctl(inducing = 10, seed = 1, ...)

test_that("te() is gp() over the same inputs, s() over one", {
  d <- syn_data()
  f_te <- gpgam(y ~ te(x1, x2, k = c(3, 4)), data = d, control = syn_ctl())
  f_gp <- gpgam(y ~ gp(x1, x2, k = 12), data = d, control = syn_ctl())
  expect_identical(predict(f_te, d[1:20, ], se.fit = TRUE), predict(f_gp, d[1:20, ], se.fit = TRUE))
  expect_equal(f_te$params$gp[[1]]$n_inducing, 12L)  # prod(k)
  # mgcv's scalar k of te() and ti() is per input: k = 4 over two inputs is 16 inducing points
  expect_equal(scalegp:::mgcv_term(quote(te(x1, x2, k = 4)), environment())$k, 16)
  expect_equal(scalegp:::mgcv_term(quote(ti(x1, x2, k = c(3, 5))), environment())$k, 15)
  expect_equal(scalegp:::mgcv_term(quote(te(x1, x2, x3, k = 3)), environment())$k, 27)
  expect_equal(scalegp:::mgcv_term(quote(te(x1, k = 7)), environment())$k, 7)
  expect_equal(scalegp:::mgcv_term(quote(s(x1, x2, k = 30)), environment())$k, 30)  # (s(): k in all)
  expect_error(scalegp:::mgcv_term(quote(te(x1, x2, k = c(5, 5, 5))), environment()), "'k' of te\\(\\) must be one number or one per input \\(2\\)")
  # a margin of one value is refused, as gp(k = 1) is (it was accepted: te(k = c(1, 6)) had 6 points)
  expect_error(scalegp:::mgcv_term(quote(te(x1, x2, k = c(1, 6))), environment()), "'k' of te\\(\\) must be at least 2 per input")
  expect_error(scalegp:::mgcv_term(quote(ti(x1, x2, k = 1)), environment()), "'k' of ti\\(\\) must be at least 2 per input")
  f_s <- gpgam(y ~ s(x1) + s(x2), data = d, control = syn_ctl())
  f_g <- gpgam(y ~ gp(x1) + gp(x2), data = d, control = syn_ctl())
  expect_identical(predict(f_s, d[1:20, ]), predict(f_g, d[1:20, ]))
})

test_that("predict() takes mgcv's labels of s() and te() terms, and type = \"iterms\"", {
  d <- syn_data(300)
  fit <- gpgam(y ~ s(x1) + te(x1, x2) + z, data = d, control = syn_ctl())
  nd <- d[1:7, ]
  expect_identical(predict(fit, nd, type = "terms", terms = c("te(x1,x2)", "s(x1)")),
                   predict(fit, nd, type = "terms", terms = c("gp(x1, x2)", "gp(x1)")))
  expect_identical(predict(fit, nd, exclude = "s(x1)", se.fit = TRUE),
                   predict(fit, nd, exclude = "gp(x1)", se.fit = TRUE))
  expect_error(predict(fit, nd, type = "terms", terms = "s(x9)"),
               "'terms' must be labels of the fit's terms: \"gp\\(x1\\)\", .* \\(not \"s\\(x9\\)\"\\)")
  expect_error(predict(fit, nd, exclude = "s(x2)"), "'exclude' must be labels")
  # "iterms": the terms, the gp() terms' variances plus the intercept's, z's unchanged
  tm <- predict(fit, nd, type = "terms", se.fit = TRUE)
  it <- predict(fit, nd, type = "iterms", se.fit = TRUE)
  expect_identical(it$fit, tm$fit)
  v0 <- vcov(fit)[1, 1]
  expect_gt(v0, 1e-4)
  for (j in c("gp(x1)", "gp(x1, x2)"))
    expect_equal(unname(it$se.fit[, j]^2 - tm$se.fit[, j]^2), rep(v0, 7), tolerance = 1e-10, info = j)
  expect_identical(it$se.fit[, "z"], tm$se.fit[, "z"])
  expect_identical(predict(fit, nd, type = "iterms"), tm$fit)
})

test_that("ti() is the pure interaction, with or without the main effects in the formula", {
  d <- syn_data()
  d$y <- d$y + 2 * (d$x1 - 0.5) * (d$x2 - 0.5) * 4
  for (fo in list(y ~ s(x1) + s(x2) + ti(x1, x2), y ~ ti(x1, x2))) {
    fit <- gpgam(fo, data = d, control = syn_ctl())
    k <- length(fit$terms$gp)
    g <- fit$terms$gp[[k]]
    expect_equal(g$spec$label, "ti(x1, x2)")
    # its average over either input's centring measure does not depend on the other input
    nodes <- lapply(g$nodes, function(s) s * g$scaling$scale[1] + g$scaling$center[1])
    s1 <- g$nodes[[1]] * g$scaling$scale[1] + g$scaling$center[1]
    s2 <- g$nodes[[2]] * g$scaling$scale[2] + g$scaling$center[2]
    a1 <- function(x2) mean(predict(fit, data.frame(x1 = s1, x2 = x2), type = "terms")[, "ti(x1, x2)"])
    a2 <- function(x1) mean(predict(fit, data.frame(x1 = x1, x2 = s2), type = "terms")[, "ti(x1, x2)"])
    expect_lt(abs(a1(0.1) - a1(0.8)), 1e-8)
    expect_lt(abs(a2(0.2) - a2(0.9)), 1e-8)
    # and it is not flat: the interaction is found
    tt <- predict(fit, d, type = "terms")
    expect_gt(sd(tt[, "ti(x1, x2)"]), 0.2)
  }
})

test_that("by = numeric gives a varying coefficient f(x) z, not centred", {
  d <- syn_data(800)
  f <- function(x) sin(2 * pi * x)
  d$y <- f(d$x1) * d$z + rnorm(nrow(d), sd = 0.1)
  fit <- gpgam(y ~ s(x1, by = z), data = d, control = syn_ctl())
  expect_equal(fit$terms$gp[[1]]$spec$label, "gp(x1):z")
  # the term is f(x) * z
  nd <- data.frame(x1 = seq(0.05, 0.95, length.out = 30), z = 1.7)
  tt <- predict(fit, nd, type = "terms", se.fit = TRUE)
  expect_lt(max(abs(tt$fit[, "gp(x1):z"] - f(nd$x1) * 1.7)), 0.12)
  # the curve drawn by plot() is f itself (the coefficient of z)
  cur <- scalegp:::term_grid_predict(fit, 1, matrix(nd$x1))
  expect_close(cur$fit * 1.7, tt$fit[, "gp(x1):z"], 1e-10)
  expect_close(cur$se * 1.7, tt$se.fit[, "gp(x1):z"], 1e-10)
  # not centred: the intercept stays near zero (f(x) z has no free level)
  expect_lt(abs(coef(fit)[["(Intercept)"]]), 0.05)
})

# Data for the factor-`by` tests: level b's inputs lean to the right (its rows
# are not a random sample of x1), so that a curve centred over its own
# level's rows and one centred over all rows (mgcv's) give different level
# constants (mean sin(4 x) 0.41 over uniform x, 0.57 over b's).
by_data <- function() {
  d <- syn_data(900)
  b <- d$g == "b"
  d$x1[b] <- sqrt(d$x1[b])
  lev <- c(a = 0, b = 1, c = -1)
  d$y <- lev[as.character(d$g)] + ifelse(b, sin(4 * d$x1), cos(3 * d$x1)) + rnorm(nrow(d), sd = 0.15)
  # each level's constant when its curve averages zero over all rows' inputs
  attr(d, "level_const") <- lev + c(mean(cos(3 * d$x1)), mean(sin(4 * d$x1)), mean(cos(3 * d$x1)))
  d
}

# Each level's curve of a factor-`by` term averages zero over all rows'
# inputs, as mgcv centres it (predicted with every row set to the level).
expect_by_centred <- function(fit, d, v, tol = 1e-10) {
  for (l in levels(d[[v]])) {
    nd <- d
    nd[[v]] <- factor(l, levels = levels(d[[v]]))
    attr(nd[[v]], "contrasts") <- attr(d[[v]], "contrasts")
    tt <- predict(fit, nd, type = "terms")
    expect_lt(abs(mean(tt[, paste0("gp(x1):", v, l)])), tol, label = paste0("gp(x1):", v, l, " over all rows"))
  }
}

test_that("by = factor gives one centred curve per level; the factor's coefficients carry their levels", {
  d <- by_data()
  fit <- gpgam(y ~ s(x1, by = g) + g, data = d, control = syn_ctl())
  labs <- vapply(fit$terms$gp, function(g) g$spec$label, "")
  expect_equal(labs, c("gp(x1):ga", "gp(x1):gb", "gp(x1):gc"))
  tt <- predict(fit, d, type = "terms")
  for (l in c("a", "b", "c"))
    expect_true(all(tt[d$g != l, paste0("gp(x1):g", l)] == 0), label = paste(l, "elsewhere"))
  expect_by_centred(fit, d, "g")
  expect_equal(unname(rowSums(tt) + attr(tt, "constant")), unname(predict(fit, d)), tolerance = 1e-10)
  # plot()'s partial residuals of a level's curve: at that level's rows only
  pdf(NULL)
  pp <- plot(fit, residuals = TRUE)
  dev.off()
  b <- d$g == "b"
  expect_close(pp[[2]]$p.resid, tt[b, "gp(x1):gb"] + residuals(fit, type = "working")[b], 1e-10)
  expect_close(pp[[2]]$x.resid, d$x1[b], 1e-12)
  expect_close(pp[[2]]$raw, d$x1[b], 1e-12)  # (its rug too)
  # the coefficients compare the levels averaged over all rows' inputs (mgcv's
  # centring): true constants (0.15, 0.43, -1.00); b's level mean of the data
  # is 0.17 above its constant
  m <- attr(d, "level_const")
  truth <- c(m[["a"]], m[["b"]] - m[["a"]], m[["c"]] - m[["a"]])
  for (j in 1:3) expect_lt(abs(coef(fit)[[j]] - truth[j]), 0.03, label = names(coef(fit))[j])
  # unseen levels are refused
  expect_error(predict(fit, data.frame(x1 = 0.5, g = "zz")), "'zz'")
})

test_that("without an intercept (y ~ 0 + f + gp(x, by = f)) each level's coefficient carries its curve's level", {
  d <- by_data()
  fit <- gpgam(y ~ 0 + g + gp(x1, by = g), data = d, control = syn_ctl())
  f1 <- gpgam(y ~ g + gp(x1, by = g), data = d, control = syn_ctl())
  expect_by_centred(fit, d, "g")
  # the level constants, as the intercept model gives them (they were left in the curves, sds 15-20x larger)
  m <- attr(d, "level_const")
  for (j in 1:3) expect_lt(abs(coef(fit)[[j]] - m[[j]]), 0.03, label = names(coef(fit))[j])
  expect_close(unname(coef(fit)), unname(coef(f1)[1] + c(0, coef(f1)[2:3])), 1e-3)
  expect_lt(max(sqrt(diag(vcov(fit)))), 0.05)
  tt <- predict(fit, type = "terms")
  expect_equal(attr(tt, "constant"), 0)
  expect_close(rowSums(tt), predict(fit), 1e-10)
  expect_lt(max(abs(predict(fit) - predict(f1))), 1e-3)
  # a plain gp() term has nothing to carry its level without an intercept: not centred
  f0 <- gpgam(y ~ 0 + g + gp(x1), data = d, control = syn_ctl())
  expect_true(all(f0$state$center == 0))
})

test_that("by = factor curves are centred, and carried, whatever the factor's contrasts", {
  d <- by_data()
  f0 <- gpgam(y ~ g + gp(x1, by = g), data = d, control = syn_ctl())
  m <- attr(d, "level_const")
  d$s <- d$g
  contrasts(d$s) <- contr.sum(3)
  d$h <- d$g
  contrasts(d$h) <- "contr.helmert"
  for (v in c("s", "h")) {
    fit <- gpgam(as.formula(sprintf("y ~ %s + gp(x1, by = %s)", v, v)), data = d, control = syn_ctl())
    suppressWarnings(expect_by_centred(fit, d, v))  # (model.frame() warns of contrasts, as lm's predict() does)
    # the same model as with treatment contrasts
    expect_lt(max(abs(predict(fit) - predict(f0))), 1e-4)
    # the coefficients: the level constants through the contrasts, [1, C]^{-1} m, with small sds
    C <- contrasts(d[[v]])
    truth <- drop(solve(cbind(1, C), m))
    for (j in seq_along(truth)) expect_lt(abs(coef(fit)[[j]] - truth[j]), 0.03, label = paste(v, j))
    expect_lt(max(sqrt(diag(vcov(fit)))), 0.05)
  }
})

test_that("mgcv's factor smooth (bs = \"fs\") as the error suggests: centred curves and a random effect that is identified", {
  set.seed(5)
  n <- 600
  d <- data.frame(x = runif(n), g = factor(sample(letters[1:6], n, TRUE)))
  b <- c(a = -1, b = -0.5, c = 0, d = 0.3, e = 0.6, f = 1)
  d$y <- b[as.character(d$g)] + sin(2 * pi * d$x) * (1 + 0.3 * as.integer(d$g)) + rnorm(n, sd = 0.3)
  fit <- gpgam(y ~ gp(x, by = g, centre = TRUE) + gp(g), data = d, control = syn_ctl())
  re <- predict(fit, data.frame(x = 0.5, g = letters[1:6]), type = "terms")[, "gp(g)"]
  expect_gt(cor(re, b), 0.99)
  expect_lt(max(abs(re - (b - mean(b)))), 0.15)
  expect_lt(summary(fit)$s.table["gp(g)", "p-value"], 1e-6)
})

test_that("by = an ordered factor gives no curve for its first level (difference curves, as mgcv)", {
  d <- syn_data(900)
  d$o <- factor(d$g, levels = c("a", "b", "c"), ordered = TRUE)
  lev <- c(a = 0, b = 1, c = -1)
  truth <- lev[as.character(d$g)] + ifelse(d$g == "b", sin(4 * d$x1), cos(3 * d$x1))
  d$y <- truth + rnorm(nrow(d), sd = 0.15)
  fit <- gpgam(y ~ o + gp(x1) + gp(x1, by = o), data = d, control = syn_ctl())
  labs <- vapply(fit$terms$gp, function(g) g$spec$label, "")
  expect_equal(labs, c("gp(x1)", "gp(x1):ob", "gp(x1):oc"))
  tt <- predict(fit, d, type = "terms")
  expect_true(all(tt[d$o == "a", c("gp(x1):ob", "gp(x1):oc")] == 0))
  # the base curve is level a's (cos), b's difference sin - cos, c's nothing
  expect_lt(sqrt(mean((fitted(fit) - truth)^2)), 0.06)
  xs <- d$x1[d$o == "b"]
  db <- tt[d$o == "b", "gp(x1):ob"]
  expect_gt(cor(db, sin(4 * xs) - cos(3 * xs)), 0.95)
  expect_lt(max(abs(tt[d$o == "c", "gp(x1):oc"])), 0.2)
  expect_equal(nrow(summary(fit)$s.table), 3L)
})

test_that("y ~ . uses the other columns of data as parametric terms", {
  d <- syn_data()[, c("y", "x1", "z")]
  f1 <- gpgam(y ~ ., data = d, control = syn_ctl())
  f2 <- gpgam(y ~ x1 + z, data = d, control = syn_ctl())
  expect_identical(coef(f1), coef(f2))
  f3 <- gpgam(y ~ gp(x1) + ., data = d, control = syn_ctl())
  expect_named(coef(f3), c("(Intercept)", "x1", "z"))
})

test_that("offset = works as in glm(), and predict() evaluates it in newdata", {
  d <- syn_data()
  f1 <- gpgam(y ~ s(x1), data = d, offset = o, control = syn_ctl())
  f2 <- gpgam(y ~ s(x1) + offset(o), data = d, control = syn_ctl())
  expect_identical(predict(f1, d[1:10, ]), predict(f2, d[1:10, ]))
  nd <- d[1:5, ]
  expect_close(predict(f1, nd) - predict(f1, transform(nd, o = 0)), nd$o, 1e-12)
  expect_error(predict(f1, nd[, c("x1", "y")]), "'newdata' lacks what the offset 'o' needs")
})

test_that("cbind(successes, failures) is binomial data with trials as weights", {
  set.seed(3)
  n <- 400
  d <- data.frame(x = runif(n), m = sample(1:6, n, TRUE))
  d$s <- rbinom(n, d$m, plogis(2 * sin(4 * d$x)))
  d$f <- d$m - d$s
  d$p <- d$s / d$m
  ctl <- syn_ctl()
  f1 <- gpgam(cbind(s, f) ~ gp(x), data = d, family = binomial(), control = ctl)
  f2 <- gpgam(p ~ gp(x), data = d, weights = m, family = binomial(), control = ctl)
  expect_identical(predict(f1, d[1:10, ]), predict(f2, d[1:10, ]))
  expect_equal(f1$objective, f2$objective)
  expect_error(gpgam(cbind(s, -f) ~ gp(x), data = d, family = binomial(), control = ctl), "'cbind\\(s, -f\\)' of binomial\\(\\) as a matrix must be cbind")
  expect_error(gpgam(cbind(s, f) ~ gp(x), data = d, control = ctl), "cbind")
  # a proportion without its trials: glm()'s warning
  expect_warning(gpgam(p ~ gp(x), data = d, family = binomial(), control = ctl),
                 "'p': non-integer numbers of successes")
})

test_that("mgcv's arguments without meaning for a GP are ignored with a warning that names them", {
  d <- syn_data(200)
  for (a in c("bs = 'cr'", "m = 2", "fx = TRUE", "sp = 0.1", "id = 1", "pc = 0.5")) {
    fo <- as.formula(paste("y ~ s(x1,", a, ") + x2"))
    expect_warning(fit <- gpgam(fo, data = d, control = syn_ctl()), paste0("'", sub(" =.*", "", a), "' is ignored"),
                   info = a)
  }
  expect_warning(gpgam(y ~ te(x1, x2, bs = "cr"), data = d, control = syn_ctl()), "te\\(\\): mgcv's 'bs'")
  # ti() of one input is its main effect: the fit of gp() of it, labelled ti()
  ft <- gpgam(y ~ ti(x1) + x2, data = d, control = syn_ctl())
  fs <- gpgam(y ~ gp(x1) + x2, data = d, control = syn_ctl())
  expect_equal(logLik(ft), logLik(fs), tolerance = 1e-12)
  expect_identical(colnames(predict(ft, type = "terms")), c("x2", "ti(x1)"))
  expect_false(ft$terms$gp[[1]]$spec$pure)
  # bs = "re": gp() of a factor is the random effect already (no warning, the
  # same fit as gp(g)); of a numeric input mgcv's random slope is not a gp()
  # term, which a warning says
  d$g <- factor(rep(letters[1:5], 40))
  expect_no_warning(fre <- gpgam(y ~ s(x1) + s(g, bs = "re"), data = d, control = syn_ctl()))
  fg <- gpgam(y ~ s(x1) + gp(g), data = d, control = syn_ctl())
  expect_equal(logLik(fre), logLik(fg), tolerance = 1e-12)
  expect_equal(fre$params$gp[[2]]$type, "factor")
  expect_warning(gpgam(y ~ s(x1) + s(x2, bs = "re"), data = d, control = syn_ctl()),
                 "s\\(x2\\): mgcv's bs = \"re\" of a numeric input is a random slope")
  # mgcv's random slope and factor smooth, and gp(f, by = x): errors that give the nearest gp() spelling
  expect_error(gpgam(y ~ s(x1, g, bs = "re"), data = d, control = syn_ctl()),
               paste0("s\\(x1, g\\): mgcv's bs = \"re\" with a factor and a numeric input is a random slope of x1 per ",
                      "level of 'g'; random slopes are not available: gp\\(g\\) gives random intercepts, ",
                      "gp\\(x1, by = g, centre = TRUE\\) \\+ gp\\(g\\) a curve per level"))
  expect_error(suppressWarnings(gpgam(y ~ s(x1, g, bs = "fs"), data = d, control = syn_ctl())),
               "'g' in gp\\(x1, g\\) must be numeric.*gp\\(x1, by = g, centre = TRUE\\) \\+ gp\\(g\\)")
  # one warning for an ignored argument however many terms repeat it
  w <- character()
  withCallingHandlers(gpgam(y ~ s(x1, bs = "cr") + s(x2, bs = "cr") + s(g, bs = "re"), data = d, control = syn_ctl()),
                      warning = function(e) { w <<- c(w, conditionMessage(e)); invokeRestart("muffleWarning") })
  expect_identical(w, "s(): mgcv's 'bs' is ignored: a gp() term is a Gaussian process; choose its kernel with kernel = \"se\", \"matern32\" or \"matern52\"")
  expect_error(gpgam(y ~ gp(g, by = x1), data = d, control = syn_ctl()),
               "'by' is not supported for a random effect gp\\(g\\).*gp\\(x1, by = g\\)")
  # mgcv's gam.control() as the control: an error that gives gp_control()'s counterparts
  expect_error(gpgam(y ~ s(x1), data = d, control = mgcv::gam.control(maxit = 50)),
               "'control' has mgcv's gam.control\\(\\) setting\\(s\\) 'nthreads', 'ncv.threads', 'irls.reg' and 16 more.*iterations \\(maxit\\)")
  expect_error(gpgam(y ~ s(x1), data = d, control = list(maxit = 50)), "'control' has mgcv's.*'maxit'")
  # gp() itself refuses mgcv's arguments, saying what it has instead
  expect_error(gp(x1, bs = "cr"), "'bs' is an argument of mgcv's smooths, not of gp\\(\\): .*kernel =")
  expect_error(gp(g, bs = "re"), "'bs' is an argument of mgcv's smooths.*random effect")
  expect_error(gp(x1, m = 2), "'m' is an argument of mgcv's smooths.*matern32")
  expect_error(gp(x1, foo = 2), "unknown argument\\(s\\) 'foo'")
  expect_error(gpgam(y ~ s(x1, by = x1), data = d, control = syn_ctl()), "'by'")
  # gam()'s and bam()'s own arguments: a warning each, the same fit; others are errors
  fm <- fg
  expect_warning(expect_warning(fm <- gpgam(y ~ s(x1) + gp(g), data = d, control = syn_ctl(), method = "REML",
                                            select = TRUE), "mgcv's 'method' is ignored: the kernel hyperparameters"),
                 "mgcv's 'select' is ignored")
  expect_identical(logLik(fm), logLik(fg))
  expect_error(gpgam(y ~ s(x1), data = d, control = syn_ctl(), foo = 1, method = "REML"),
               "unused argument\\(s\\) 'foo' \\(see \\?gpgam; mgcv's method, ")
  expect_error(gpgam(y ~ s(x1), d, gaussian(), "vi", syn_ctl(), NULL, NULL, NULL, NULL, TRUE, 1), "unnamed")
})
