# Invalid input gives an error (or warning) that names the culprit.

bad_data <- function(n = 50) {
  set.seed(7)
  d <- data.frame(x = runif(n), z = rnorm(n), f = factor(sample(letters[1:3], n, TRUE)),
                  ch = sample(c("u", "v"), n, TRUE), stringsAsFactors = FALSE)
  d$y <- sin(5 * d$x) + rnorm(n, sd = 0.2)
  d
}

bad_ctl <- function(...) qctl(inducing = 10, iterations = 5, seed = 1, ...)

test_that("NA in the response follows na.action", {
  d <- bad_data()
  d$y[c(3, 8)] <- NA
  fit <- gpgam(y ~ gp(x), data = d, control = bad_ctl())
  expect_equal(nobs(fit), 48L)
  expect_length(fitted(fit), 48L)
  expect_equal(unname(as.integer(fit$na.action)), c(3L, 8L))
  expect_error(gpgam(y ~ gp(x), data = d, control = bad_ctl(), na.action = na.fail), "missing values")
  # the global option is honoured as in lm()
  withr_opt <- options(na.action = "na.fail")
  on.exit(options(withr_opt), add = TRUE)
  expect_error(gpgam(y ~ gp(x), data = d, control = bad_ctl()), "missing values")
})

test_that("infinite values are refused, naming the variable", {
  d <- bad_data()
  d$x[3] <- Inf
  expect_error(gpgam(y ~ gp(x), data = d, control = bad_ctl()), "'x'.*infinite")
  d <- bad_data()
  d$z[5] <- -Inf
  expect_error(gpgam(y ~ gp(x) + z, data = d, control = bad_ctl()), "'z'.*infinite")
  d <- bad_data()
  d$y[1] <- Inf
  expect_error(gpgam(y ~ gp(x), data = d, control = bad_ctl()), "'y' has 1 non-finite value(s) (the first, in row 1, is Inf)",
               fixed = TRUE)
  d$cnt <- rep(3, nrow(d))  # (the response as the formula writes it; log(0) in row 3)
  d$cnt[3] <- 0
  expect_error(gpgam(log(cnt) ~ gp(x), data = d, control = bad_ctl()),
               "'log(cnt)' has 1 non-finite value(s) (the first, in row 3, is -Inf)", fixed = TRUE)
  fit <- gpgam(y ~ gp(x) + z, data = bad_data(), control = bad_ctl())
  nd <- bad_data()[1:3, ]
  nd$x[2] <- Inf
  expect_error(predict(fit, nd), "'x'.*infinite")
})

test_that("gp() inputs must be numeric and non-constant", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x, f), data = d, control = bad_ctl()), "'f'.*numeric.*factor")
  expect_error(gpgam(y ~ gp(x, ch), data = d, control = bad_ctl()), "'ch'.*numeric.*character")
  d$day <- as.Date("2024-01-01") + seq_len(nrow(d))
  expect_error(gpgam(y ~ gp(day), data = d, control = bad_ctl()), "'day'.*not Date.*gp\\(as.numeric\\(day\\)\\), in days")
  d$k <- 1
  expect_error(gpgam(y ~ gp(x, k), data = d, control = bad_ctl()), "constant input: 'k'")
  expect_error(gpgam(y ~ gp(k), data = d, control = bad_ctl()), "constant input: 'k'")
  expect_error(gpgam(y ~ gp(x, x), data = d, control = bad_ctl()), "'x' is repeated")
  expect_error(gpgam(y ~ gp(nonexistent), data = d, control = bad_ctl()), "'data' lacks a variable.*nonexistent")
  # a constant parametric column
  expect_error(gpgam(y ~ gp(x) + k, data = d, control = bad_ctl()), "'k' is constant")
})

test_that("too few rows are refused", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x), data = d[1, ], control = bad_ctl()), "'data' has 1 usable row")
  # a data argument that cannot be evaluated is blamed on 'data', not 'formula'
  expect_error(gpgam(y ~ gp(x), data = no_such_data_frame, control = bad_ctl()),
               "'data' could not be evaluated: object 'no_such_data_frame' not found")
  expect_error(gpgam(y ~ gp(x), data = stop("boom"), control = bad_ctl()), "'data' could not be evaluated: boom")
  expect_error(gpgam(y ~ gp(x), data = d, subset = x > 2, control = bad_ctl()), "'data' has 0 usable row")
  expect_error(gpgam(y ~ gp(x), data = as.matrix(d[, c("x", "y")]), control = bad_ctl()), "'data'.*data frame")
  yy <- d$y
  expect_error(gpgam(yy ~ gp(x_nowhere), control = bad_ctl()), "'formula'.*not in the formula's environment.*x_nowhere")
  expect_error(gpgam(y ~ gp(x_nowhere), data = d, control = bad_ctl()), "'data' lacks a variable.*x_nowhere")
  # a variable only subset= (weights=) uses names that argument; a weights vector
  # of the wrong length names 'weights', and the error's call does not print the data
  expect_error(gpgam(y ~ gp(x), data = d, subset = not_there > 1, control = bad_ctl()), "'subset' names a variable.*not_there")
  expect_error(gpgam(y ~ gp(x), data = d, weights = w_nowhere, control = bad_ctl()), "'weights' names a variable.*w_nowhere")
  e <- tryCatch(gpgam(y ~ gp(x), data = d, weights = rep(1, 3), control = bad_ctl()), error = identity)
  expect_match(conditionMessage(e), "'weights' does not match the rows")
  expect_null(conditionCall(e))
  expect_error(gpgam(y ~ gp(x), data = list(x = d$x, y = d$y[-1]), control = bad_ctl()), "'data'.*differ in length")
})

test_that("the response must suit the family", {
  d <- bad_data()
  d$y <- rep(0:2, length.out = nrow(d))
  expect_error(gpgam(y ~ gp(x), data = d, family = binomial(), control = bad_ctl()), "'y'.*0/1")
  d$y <- -0.5
  expect_error(gpgam(y ~ gp(x), data = d, family = binomial(), control = bad_ctl()), "'y'.*0/1")
  d$y <- 1
  expect_error(gpgam(y ~ gp(x), data = d, family = binomial(link = "probit"), control = bad_ctl()),
               "'y'.*single class")
  d$y <- factor(rep(c("a", "b", "c"), length.out = nrow(d)))
  expect_error(gpgam(y ~ gp(x), data = d, family = binomial(), control = bad_ctl()), "'y'.*3 levels")
  d$y <- rep(c(-1, 2), length.out = nrow(d))
  expect_error(gpgam(y ~ gp(x), data = d, family = poisson(), control = bad_ctl()), "'y'.*non-negative")
  d$y <- rep(c(0.5, 2), length.out = nrow(d))
  expect_warning(gpgam(y ~ gp(x), data = d, family = poisson(), control = bad_ctl()), "'y'.*non-integer")
  d$y <- 0  # (no information on the rate's level: the intercept would run to the prior's tail)
  expect_error(gpgam(y ~ gp(x), data = d, family = poisson(), control = bad_ctl()), "'y'.*0 in every row")
  expect_error(gpgam(y ~ gp(x), data = d, family = mgcv::nb(), control = bad_ctl()), "'y'.*0 in every row")
  d$y <- rep(c("a", "b"), length.out = nrow(d))
  expect_error(gpgam(y ~ gp(x), data = d, control = bad_ctl()), "'y'.*numeric")
  # a constant response fits, with a warning (glm() fits it too)
  d$y <- 2
  expect_warning(gpgam(y ~ gp(x), data = d, control = bad_ctl()), "'y' is constant \\(every value is 2\\)")
  # valid codings of a binary response agree: factor (first level = failure), logical, 0/1
  d <- bad_data()
  yb <- d$y > 0
  f01 <- gpgam(yb ~ gp(x), data = transform(d, yb = as.numeric(yb)), family = binomial(), control = bad_ctl())
  flg <- gpgam(yb ~ gp(x), data = transform(d, yb = yb), family = binomial(), control = bad_ctl())
  ffc <- gpgam(yb ~ gp(x), data = transform(d, yb = factor(ifelse(yb, "yes", "no"))), family = binomial(),
               control = bad_ctl())
  expect_identical(predict(flg, d[1:5, ]), predict(f01, d[1:5, ]))
  expect_identical(predict(ffc, d[1:5, ]), predict(f01, d[1:5, ]))
})

test_that("weights and offsets are checked", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x), data = d, weights = rep(-1, nrow(d)), control = bad_ctl()), "'weights'")
  expect_error(gpgam(y ~ gp(x), data = d, weights = rep(Inf, nrow(d)), control = bad_ctl()), "'weights'")
  d$o <- 0
  d$o[2] <- Inf
  expect_error(gpgam(y ~ gp(x) + offset(o), data = d, control = bad_ctl()), "'offset'")
})

test_that("k or inducing above the number of unique rows warns and is reduced", {
  d <- bad_data()
  d$x <- rep(1:5, 10)
  expect_warning(expect_warning(fit <- gpgam(y ~ gp(x, k = 8), data = d, control = bad_ctl(fixed = "inducing")),
                                "'?k'? = 8.*5 unique"), "only 5 distinct")
  expect_equal(nrow(fit$params$gp[[1]]$inducing), 5L)
  expect_equal(sort(unname(fit$params$gp[[1]]$inducing[, 1])), 1:5)
  d <- bad_data()
  expect_warning(fit <- gpgam(y ~ gp(x), data = d, control = qctl(inducing = 1e4, iterations = 5)),
                 "'?inducing'? = 10000.*50 unique")
  expect_equal(nrow(fit$params$gp[[1]]$inducing), 50L)
  # the default (64 for a term over two inputs) above n is reduced silently
  expect_no_warning(fit <- gpgam(y ~ gp(x, z), data = d, control = qctl(iterations = 5)))
  expect_equal(nrow(fit$params$gp[[1]]$inducing), 50L)
  # and the default for one input is 20
  fit <- gpgam(y ~ gp(x), data = d, control = qctl(iterations = 5))
  expect_equal(nrow(fit$params$gp[[1]]$inducing), 20L)
})

test_that("gp_control() rejects invalid values, naming the argument", {
  bad <- list(
    inducing = list(0, -3, NA, 2.5, 1e12, "10"),
    batch_size = list(0, -1, NA, 2.5, 1e12),
    iterations = list(0, -1, NA, 1.5, 1e12, NULL),
    epochs = list(0, -1, NA, Inf),
    learning_rate = list(0, -0.01, NA, Inf, 1e3),
    tol = list(0, -1, NA, Inf),
    patience = list(0, -1, NA, 2.5, 1e12),
    natgrad_step = list(0, -0.5, NA, 1.5),
    threads = list(0, -1, NA, 1.5, 1e12),
    seed = list(-1, NA, 0.5, 1e12, "a"),
    jitter = list(0, -1e-6, NA, 2),
    gh_points = list(0, -1, NA, 3, 1000, 10.5),
    sigma = list(0, -1, NA, Inf),
    verbose = list(NA, "yes"),
    trace = list(NA, "yes", c(TRUE, FALSE)),
    fixed = list("everything", 1)
  )
  for (arg in names(bad)) for (v in bad[[arg]]) {
    expect_error(do.call(gp_control, setNames(list(v), arg)), paste0("'", arg, "'"),
                 info = paste(arg, "=", deparse1(v)))
  }
  # valid edge values
  expect_s3_class(gp_control(seed = 0, natgrad_step = 1, gh_points = 5, verbose = FALSE), "gp_control")
  # mgcv's name of verbose (gam.control(trace = )), as a list too
  expect_false(gp_control(verbose = TRUE, trace = FALSE)$verbose)
  expect_true(gp_control(verbose = FALSE, trace = TRUE)$verbose)
  # a plain list is validated the same way
  expect_error(gpgam(y ~ gp(x), data = bad_data(), control = list(iterations = 0)), "'iterations'")
  expect_error(gpgam(y ~ gp(x), data = bad_data(), control = "fast"), "'control'")
})

test_that("gp() rejects invalid arguments", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x, k = 0), data = d, control = bad_ctl()), "'k'")
  expect_error(gpgam(y ~ gp(x, lengthscale = -1), data = d, control = bad_ctl()), "'lengthscale'")
  expect_error(gpgam(y ~ gp(x, z, lengthscale = c(1, 2, 3)), data = d, control = bad_ctl()), "'lengthscale'")
  expect_error(gpgam(y ~ gp(x, variance = 0), data = d, control = bad_ctl()), "'variance'")
  expect_error(gpgam(y ~ gp(x, ard = NA), data = d, control = bad_ctl()), "'ard'")
  expect_error(gpgam(y ~ gp(x, inducing = c(0.1, 0.1)), data = d, control = bad_ctl()), "'inducing'.*duplicated")
  expect_error(gpgam(y ~ gp(x, inducing = cbind(1:3, 1:3)), data = d, control = bad_ctl()), "'inducing'")
  expect_error(gpgam(y ~ gp(x, foo = 1), data = d, control = bad_ctl()), "'foo'")
  expect_error(gp(), "at least one input")
})

test_that("unsupported families and inference engines are refused", {
  d <- bad_data()
  d$yp <- abs(d$y) + 0.1
  expect_error(gpgam(yp ~ gp(x), data = d, family = Gamma(), control = bad_ctl()),
               "'family'.*Gamma.*supported: gaussian\\(identity\\), binomial\\(probit\\), binomial\\(logit\\), poisson\\(log\\)")
  expect_error(gpgam(y ~ gp(x), data = d, family = binomial("cloglog"), control = bad_ctl()),
               "'family'.*cloglog.*supported:.*binomial\\(logit\\)")
  expect_error(gpgam(y ~ gp(x), data = d, family = gaussian("log"), control = bad_ctl()), "'family'.*supported")
  expect_error(gpgam(y ~ gp(x), data = d, family = "not a family", control = bad_ctl()), "'family'.*not a family")
})

test_that("an unknown kernel is an error naming the argument", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x, kernel = "foo"), data = d, control = bad_ctl()), "matern52")  # lists the choices
  expect_error(gpgam(y ~ gp(x, kernel = "foo"), data = d, control = bad_ctl()), "kernel")    # and the argument
})

test_that("an unknown inference engine is an error naming the argument", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x), data = d, inference = "mcmc", control = bad_ctl()), "\"vi\"")
  expect_error(gpgam(y ~ gp(x), data = d, inference = "mcmc", control = bad_ctl()), "inference")
})

test_that("malformed formulas are refused", {
  d <- bad_data()
  expect_error(gpgam(~ gp(x), data = d, control = bad_ctl()), "'formula'.*two-sided")
  expect_error(gpgam(y ~ gp(x) + gp(x), data = d, control = bad_ctl()), "'formula'.*twice")
  expect_error(gpgam(y ~ gp(x, z) + gp(z, x), data = d, control = bad_ctl()), "'formula'.*twice")
  expect_error(gpgam(y ~ gp(x):z, data = d, control = bad_ctl()), "'formula'.*interactions")
  expect_error(gpgam(y ~ 0, data = d, control = bad_ctl()), "'formula'.*no terms")
})

test_that("predict() refuses newdata without the needed columns", {
  d <- bad_data()
  fit <- gpgam(y ~ gp(x) + z + f, data = d, control = bad_ctl())
  expect_error(predict(fit, d[, c("x", "f")]), "'newdata'.*'z'")
  for (v in c("x", "z", "f")) expect_error(predict(fit, data.frame(q = 1)), paste0("'newdata' lacks.*'", v, "'"))
  expect_error(predict(fit, d, type = "nonsense"), "'type' must be one of .*, not \"nonsense\"")
  expect_error(predict(fit, d, se.fit = NA), "'se.fit'")
  nd <- d[1:3, ]
  nd$x <- as.character(nd$x)
  expect_error(predict(fit, nd), "'x'")
  # without a stored model frame newdata is required
  f0 <- gpgam(y ~ gp(x), data = d, control = bad_ctl(), model = FALSE)
  expect_error(predict(f0), "'newdata'")
})

test_that("gpgam() leaves the user's data unchanged", {
  d <- bad_data()
  d$y[4] <- NA
  d0 <- d
  fit <- gpgam(y ~ gp(x, z) + f, data = d, control = bad_ctl(), subset = z > -2, weights = rep(2, nrow(d)))
  p <- predict(fit, d[1:10, ], type = "terms")
  expect_identical(d, d0)
})

test_that("engine options: invalid values, options of another engine, unknown names", {
  d <- bad_data()
  for (v in list(0, -1, 2.5, NA, "a")) expect_error(gp_control(rank = v), "'rank'", info = deparse1(v))
  expect_error(gp_control(posterior = "full"), "'posterior'")
  expect_error(gp_control(damping = 1.5), "'damping'")
  expect_error(gp_control(foo = 1), "'foo' is not an argument of gp_control\\(\\).*damping")
  # an option of the other engine names both
  expect_error(gpgam(y ~ gp(x), data = d, control = bad_ctl(damping = 0.5)),
               "'damping' is an option of inference = \"ep\", not of inference = \"vi\"")
  # a control object changed by hand is validated again when it is used
  ctl <- bad_ctl()
  ctl$rank <- -2
  expect_error(gpgam(y ~ gp(x), data = d, control = ctl), "'rank'")
  expect_type(vi_options(), "list")
  expect_equal(vi_options()$posterior, "coupled")
  expect_equal(ep_options()$sites, "separate")
})

test_that("a family that is not one is refused naming 'family'", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x), data = d, family = "not a family", control = bad_ctl()), "'family'.*not a family")
  expect_error(gpgam(y ~ gp(x), data = d, family = "mean", control = bad_ctl()), "'family'")
  expect_error(gpgam(y ~ gp(x), data = d, family = 3, control = bad_ctl()), "'family'.*supported")
})

test_that("rows with NA weights are dropped, as lm() drops them", {
  d <- bad_data()
  d$w <- runif(nrow(d), 0.5, 2)
  d$w[c(2, 9)] <- NA
  fit <- gpgam(y ~ gp(x), data = d, weights = w, control = bad_ctl())
  expect_equal(nobs(fit), nrow(d) - 2L)
  expect_equal(nobs(lm(y ~ x, data = d, weights = w)), nrow(d) - 2L)
  expect_error(gpgam(y ~ gp(x), data = d, weights = w, na.action = na.fail, control = bad_ctl()), "missing values")
})

test_that("a single inducing point is refused naming 'k' or 'inducing'", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x, k = 1), data = d, control = bad_ctl()), "'k' must be at least 2")
  expect_error(gp_control(inducing = 1), "'inducing' must be at least 2")
})

test_that("all-zero weights are refused, not fitted to NaN", {
  d <- bad_data()
  expect_error(gpgam(y ~ gp(x), data = d, weights = rep(0, nrow(d)), control = bad_ctl()),
               "'weights' are all zero")
})

test_that("an input with a spread below the numerical resolution is named as such", {
  d <- bad_data()
  d$tiny <- 1 + seq_len(nrow(d)) * 1e-15
  expect_error(gpgam(y ~ gp(tiny), data = d, control = bad_ctl()), "spread is below the numerical resolution.*'tiny'")
})

test_that("the decoupled engine names 'by' as what it does not support", {
  d <- bad_data()
  d$f <- factor(rep(c("a", "b"), length.out = nrow(d)))
  expect_error(gpgam(y ~ gp(x, by = f) + f, data = d, inference = "decoupled", control = bad_ctl()),
               "does not support 'by'")
})

test_that("families of mgcv that are not supported get the list of those that are", {
  skip_if_not_installed("mgcv")
  d <- bad_data()
  for (fam in list(mgcv::ocat(R = 3), mgcv::tw(), mgcv::betar()))
    expect_error(gpgam(y ~ gp(x), data = d, family = fam, control = bad_ctl()),
                 "'family'.*supported: gaussian\\(identity\\).*Gamma\\(link = \"log\"\\).*mgcv::nb\\(\\)")
})

test_that("mgcv's t2() is named with what to write instead", {
  d <- bad_data()
  d$x2 <- runif(nrow(d))
  expect_error(gpgam(y ~ t2(x, x2), data = d, control = bad_ctl()), "t2\\(x, x2\\).*not supported.*te\\(\\)")
})

test_that("a term with very few distinct inputs warns; the unique count is exact beyond 50000 rows", {
  d <- bad_data()
  expect_warning(expect_warning(gpgam(y ~ gp(x), data = d[1:5, ], control = bad_ctl()), "only 5 distinct input values"),
                 "exceeds the 5 unique")
  # 60 distinct values, most of them outside the 50000 evenly spaced rows of the estimate
  X <- matrix(c(rep(0, 59940), seq_len(60)), ncol = 1)
  expect_lt(scalegp:::n_unique_rows(X), 60)
  expect_equal(scalegp:::n_unique_rows(X, exact = TRUE), 61)
})

test_that("gp_control(sigma =, fixed = \"sigma\") with a family without a residual sd warns, naming the argument", {
  set.seed(3)
  d <- data.frame(x = runif(60))
  d$yb <- rbinom(60, 1, plogis(sin(4 * d$x)))
  d$yg <- rgamma(60, shape = 3, rate = 3 / exp(d$x))
  expect_warning(gpgam(yb ~ gp(x), data = d, family = binomial(), control = gp_control(sigma = 1, verbose = FALSE)),
                 "'control'.*binomial has none")
  expect_warning(gpgam(yg ~ gp(x), data = d, family = Gamma(link = "log"),
                       control = gp_control(fixed = "sigma", verbose = FALSE)), "Gamma has none.*shape is estimated")
  expect_no_warning(gpgam(yg ~ gp(x), data = d, family = Gamma(link = "log"), control = gp_control(verbose = FALSE)))
})

test_that("a term with fewer rows than it needs warns, naming the term (as mgcv refuses such a model)", {
  set.seed(3)
  ctl <- bad_ctl()
  d5 <- data.frame(x = runif(5), y = rnorm(5))
  expect_warning(gpgam(y ~ gp(x), data = d5, control = qctl(iterations = 5, seed = 1)),
                 "gp\\(x\\) has only 5 distinct input values; its curve cannot be estimated well")
  d8 <- data.frame(x1 = runif(8), x2 = runif(8), y = rnorm(8))
  expect_warning(gpgam(y ~ gp(x1, x2), data = d8, control = qctl(iterations = 5, seed = 1)),
                 "gp\\(x1, x2\\) has only 8 distinct input rows")
  # a random effect with one row per level
  d30 <- data.frame(x = seq(0, 1, length.out = 30), f = factor(sprintf("l%02d", 1:30)), y = rnorm(30))
  expect_warning(gpgam(y ~ gp(f), data = d30, control = ctl),
                 "gp\\(f\\) has 30 levels for 30 rows, one row per level; its variance cannot be estimated well")
  expect_no_warning(gpgam(y ~ gp(f), data = rbind(d30, d30), control = ctl))
  # parametric coefficients as many as the rows
  expect_warning(gpgam(y ~ gp(x) + f, data = d30, control = ctl),
                 "the parametric terms \\(intercept, f\\) have 30 coefficients for 30 rows")
  # one level of a factor 'by' with two rows: that level's curve is named
  d12 <- data.frame(x = seq(0, 1, length.out = 40), g = factor(rep(c("a", "b"), c(38, 2))), y = rnorm(40))
  expect_warning(gpgam(y ~ gp(x, by = g), data = d12, control = ctl),
                 "^gp\\(x\\):g has fewer than 10 distinct input values at 1 of its 2 levels \\(b: 2\\); ")
  # many such levels: one warning for all of them (it was one per level)
  d7 <- data.frame(x = rep(1:4, 7), g = factor(rep(sprintf("s%d", 1:7), each = 4)), y = rnorm(28))
  w <- character()
  withCallingHandlers(gpgam(y ~ gp(x, by = g), data = d7, control = ctl),
                      warning = function(c) { w <<- c(w, conditionMessage(c)); invokeRestart("muffleWarning") })
  expect_identical(w, c("gp(x):g: 'inducing' = 10 exceeds the 4 unique input rows; using 4 inducing points",
                        paste("gp(x):g has fewer than 10 distinct input values at 7 of its 7 levels",
                              "(s1: 4, s2: 4, s3: 4, s4: 4, s5: 4, ...); their curves cannot be estimated well")))
})

test_that("without data the variables come from the formula's environment; a list serves as data", {
  d <- bad_data(80)
  x <- d$x
  y <- d$y
  from_env <- gpgam(y ~ gp(x), control = bad_ctl())
  from_df <- gpgam(y ~ gp(x), data = d, control = bad_ctl())
  from_list <- gpgam(y ~ gp(x), data = list(x = d$x, y = d$y), control = bad_ctl())
  expect_identical(from_env$objective, from_df$objective)
  expect_identical(from_list$objective, from_df$objective)
  expect_identical(predict(from_env, d[1:5, ]), predict(from_df, d[1:5, ]))
  expect_identical(unname(fitted(from_env)), unname(fitted(from_df)))
})

test_that("a count given as inducing locations, threads above the cores, gp() terms in dgp() and gp_check() of gaulss", {
  set.seed(3)
  d <- data.frame(x = runif(60))
  d$y <- sin(6 * d$x) + rnorm(60, sd = 0.3)
  expect_error(gp(x, inducing = 30), "'inducing' gives the locations .*\\(1 given\\).*gp\\(x, k = 30\\)")
  expect_error(gp(x, inducing = 0.5), "gp\\(x, k = 20\\)")
  cores <- RcppParallel::defaultNumThreads()
  expect_warning(ctl <- gp_control(threads = cores + 7), "'threads' = [0-9]+ is more than the [0-9]+ cores")
  expect_equal(ctl$threads, cores)
  expect_error(dgp(y ~ gp(x), data = d), "'formula' of dgp\\(\\) lists its inputs plainly")
  skip_if_not_installed("mgcv")
  fl <- gpgam(list(y ~ gp(x), ~ x), data = d, family = mgcv::gaulss(), control = bad_ctl())
  expect_error(gp_check(fl), "'fit' is a location-scale \\(gaulss\\) fit")
})

test_that("aliased parametric columns warn, naming the columns lm() would give NA, and are dropped", {
  set.seed(4)
  d <- data.frame(x = runif(80), z1 = rnorm(80), f = factor(rep(c("a", "b"), 40)))
  d$z2 <- 2 * d$z1
  d$g <- factor(ifelse(d$f == "a", "u", "v"))
  d$y <- sin(6 * d$x) + d$z1 + rnorm(80, sd = 0.3)
  expect_warning(gpgam(y ~ gp(x) + z1 + z2, data = d, control = bad_ctl()),
                 "rank deficient \\('z2' aliased with earlier columns\\); its coefficient is set to 0")
  expect_warning(fa <- gpgam(y ~ gp(x) + f + g + z1, data = d, control = bad_ctl()),
                 "rank deficient \\('gv' aliased")
  cl <- stats::coef(stats::lm(y ~ x + f + g + z1, d))  # (the column lm() gives NA is the one named)
  expect_identical(names(cl)[is.na(cl)], "gv")
  # the aliased column leaves the design: the fit is the one without it, and
  # its coefficient is 0 with variance 0, untested (as mgcv's)
  fr <- gpgam(y ~ gp(x) + f + z1, data = d, control = bad_ctl())
  b <- coef(fa)
  expect_identical(names(b), c("(Intercept)", "fb", "gv", "z1"))
  expect_identical(unname(b["gv"]), 0)
  for (nm in names(coef(fr))) expect_equal(b[[nm]], coef(fr)[[nm]], tolerance = 1e-6)
  expect_equal(fa$objective, fr$objective, tolerance = 1e-8)
  V <- vcov(fa)
  expect_true(all(V["gv", ] == 0) && all(V[, "gv"] == 0))
  expect_equal(unname(diag(V)[c(1, 2, 4)]), unname(diag(vcov(fr))), tolerance = 1e-6)
  expect_equal(fa$df, fr$df)
  expect_equal(df.residual(fa), df.residual(fr), tolerance = 1e-8)
  s <- summary(fa)
  expect_true(is.na(s$coefficients["gv", 3]) && is.na(s$coefficients["gv", 4]))
  expect_match(s$warnings, "'gv' \\(aliased with earlier columns\\) set to 0", all = FALSE)
  a <- anova(fa)
  expect_identical(a$edf[a$term == "g"], 0)
  expect_true(is.na(a[["p-value"]][a$term == "g"]))
  expect_equal(a$edf[a$term == "f"], 1)
  nd <- d[1:5, ]
  expect_equal(predict(fa, nd), predict(fr, nd), tolerance = 1e-6)
  X <- predict(fa, nd, type = "lpmatrix")
  expect_equal(unname(drop(X %*% coef(fa, full = TRUE))), unname(predict(fa, nd)), tolerance = 1e-10)
})

test_that("separated classes warn, naming the column, as glm() warns", {
  set.seed(3)
  d <- data.frame(x = runif(200), u = runif(200))
  d$y <- as.numeric(d$x > 0.5)  # x separates the classes
  expect_warning(f <- gpgam(y ~ x + gp(u), data = d, family = binomial(), control = qctl(seed = 1)),
                 "fitted probabilities numerically 0 or 1.*separated by 'x'")
  # (the coefficient is where the vague prior puts it: far beyond what data could estimate)
  expect_gt(abs(coef(f)[["x"]]) * sd(d$x), 10)
  # overlapping classes: no warning
  d$y <- rbinom(200, 1, plogis(4 * (d$x - 0.5)))
  expect_no_warning(gpgam(y ~ x + gp(u), data = d, family = binomial(), control = qctl(seed = 1)))
  # a large effect the data determine (12 logits per sd; fitted probabilities of 0 or 1 occur): no warning
  d3 <- data.frame(x = rnorm(3000), u = runif(3000))
  d3$y <- rbinom(3000, 1, plogis(12 * d3$x))
  expect_no_warning(f3 <- gpgam(y ~ x + gp(u), data = d3, family = binomial(), control = qctl(seed = 1)))
  expect_gt(coef(f3)[["x"]], 8)
})

test_that("gp_control() with both epochs and iterations says which one counts", {
  expect_warning(ctl <- gp_control(iterations = 10, epochs = 2, batch_size = 50),
                 "'epochs' and 'iterations' both given")
  expect_no_warning(gp_control(epochs = 2, batch_size = 50))
  d <- bad_data(200)
  f <- gpgam(y ~ gp(x), data = d, control = suppressWarnings(qctl(iterations = 10, epochs = 2, batch_size = 50,
                                                                    inducing = 10, seed = 1)))
  expect_equal(f$iterations, 8L)  # ceiling(2 * 200 / 50)
})

test_that("a matrix input or by, a numeric-looking character input and a dgp() offset are refused or flagged", {
  set.seed(1)
  d <- data.frame(x = round(runif(300), 2))
  d$y <- sin(2 * pi * d$x) + rnorm(300, sd = 0.2)
  d$X <- cbind(runif(300), runif(300))
  expect_error(gpgam(y ~ gp(x, by = X), data = d, control = qctl()),
               "'by' 'X' of gp(x):X is a matrix of 2 columns; it must be one value per row", fixed = TRUE)
  expect_error(gpgam(y ~ gp(X), data = d, control = qctl()),
               "'X' in gp(X) is a matrix of 2 columns; name each input: gp(X[, 1], X[, 2])", fixed = TRUE)
  # a numeric column read as text (a stray "n/a") fits as a random effect: said so
  d$xc <- as.character(d$x)
  d$xc[3] <- "n/a"
  expect_warning(gpgam(y ~ gp(xc), data = d, control = qctl(iterations = 5)),
                 "gp\\(xc\\): 'xc' is character, so the term is a random effect .*99% of its values read as numbers")
  d$g <- sample(c("a", "b", "c"), 300, TRUE)  # (a grouping column of text: no warning)
  expect_no_warning(gpgam(y ~ gp(g), data = d, control = qctl(iterations = 5)))
  # dgp() has no offsets: an offset() in its formula was dropped silently
  d$o <- rnorm(300)
  expect_error(dgp(y ~ x + offset(o), data = d), "'formula' has an offset(), which dgp() does not support", fixed = TRUE)
})
