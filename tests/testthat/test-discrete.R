# Discretised covariates (vi_options(discrete, bins)): full-batch variational
# fits form their products from distinct (rounded) values.

test_that("discretised fits equal row fits with exact values and stay close with rounding", {
  set.seed(3)
  n <- 6000
  d <- data.frame(x1 = round(runif(n), 2), x2 = runif(n), g = factor(sample(letters[1:4], n, TRUE)))
  d$y <- sin(2 * pi * d$x1) + d$x2^2 + as.numeric(d$g) / 4 + rnorm(n, sd = 0.3)
  # (SE kernel: the measured values below are for it)
  f <- y ~ gp(x1, kernel = "se") + gp(x2, kernel = "se") + g
  ctl <- function(...) gp_control(verbose = FALSE, seed = 1, inducing = 10, learn_inducing = TRUE, ...)
  rows <- gpgam(f, data = d, control = ctl(discrete = FALSE))
  exact <- gpgam(f, data = d, control = ctl(discrete = TRUE, bins = Inf))
  auto <- gpgam(f, data = d, control = ctl())
  expect_false(rows$discrete)
  expect_true(exact$discrete)
  expect_true(auto$discrete)  # n >= 5000
  expect_true(rows$converged && exact$converged && auto$converged)
  # the same bound: equal ELBOs (the L-BFGS paths differ by rounding only)
  expect_lt(abs(exact$elbo - rows$elbo), 1e-6 * abs(rows$elbo))
  nd <- d[1:200, ]
  pr <- predict(rows, nd, se.fit = TRUE)
  pe <- predict(exact, nd, se.fit = TRUE)
  pa <- predict(auto, nd, se.fit = TRUE)
  expect_lt(max(abs(pe$fit - pr$fit)), 1e-3 * max(pr$se.fit))
  # x1 (101 values) is kept exact, x2 rounded to 1000 values: the fit moves
  # by a small share of its se (measured 0.004; rounding x1 as well: 0.14)
  expect_lt(max(abs(pa$fit - pr$fit) / pr$se.fit), 0.02)
  expect_lt(max(abs(pa$se.fit / pr$se.fit - 1)), 0.01)
  expect_lt(abs(auto$elbo - rows$elbo), 0.3)
  # fitted values: summed from the distinct values when none is rounded,
  # interpolated from x2's grid of 1000 values otherwise (error of order
  # step^4); both equal predict() at the rows
  for (fit in list(exact, auto)) {
    expect_lt(max(abs(fitted(fit) - predict(fit, d))), 1e-9)
    expect_lt(max(abs(fit$linear.predictors - predict(fit, d))), 1e-9)
  }
})

test_that("fitted values of rounded fits are the predictions at the rows' own inputs", {
  set.seed(8)
  n <- 12000
  d <- data.frame(x1 = runif(n, -2, 2), x2 = runif(n, -2, 2), x3 = runif(n))
  d$y <- sin(3 * d$x1) + 2 * exp(-(d$x2^2 + d$x3^2)) + rnorm(n, sd = 0.3)
  # gp(x1) rounded to 1000 values, gp(x2, x3) to its 100 x 100 grid
  fit <- gpgam(y ~ gp(x1) + gp(x2, x3), data = d, control = gp_control(verbose = FALSE, seed = 1, inducing = 12))
  expect_true(fit$discrete && fit$converged)
  p <- predict(fit, d, se.fit = TRUE)
  # (measured: at most 1.3e-6, 1e-4 se; the rounded inputs: 0.48 se on average)
  expect_lt(max(abs(fit$linear.predictors - p$fit) / p$se.fit), 1e-3)
  expect_lt(max(abs(fitted(fit) - p$fit)), 1e-5)
  # the rows' rounded inputs (the values the fit used) are far off: so the
  # check above would see a fit that took them
  grid <- function(x, k) min(x) + round((x - min(x)) / ((max(x) - min(x)) / (k - 1))) * ((max(x) - min(x)) / (k - 1))
  dr <- transform(d, x1 = grid(x1, 1000), x2 = grid(x2, 100), x3 = grid(x3, 100))
  expect_gt(mean(abs(predict(fit, dr) - p$fit) / p$se.fit), 0.2)
  # binomial: the mean at the inputs, the variance at the rounded values
  d$yb <- rbinom(n, 1, plogis(d$y - mean(d$y)))
  fb <- gpgam(yb ~ gp(x1) + gp(x2, x3), data = d, family = binomial(),
              control = gp_control(verbose = FALSE, seed = 1, inducing = 12))
  pb <- predict(fb, d, se.fit = TRUE)
  expect_lt(max(abs(fb$linear.predictors - pb$fit) / pb$se.fit), 1e-3)
  # (measured: link 8e-6 se; response 7e-4 relative, from the variance)
  r <- predict(fb, d, type = "response")
  expect_lt(max(abs(fitted(fb) - r) / r), 2e-3)
})

test_that("binary and count fits: discretised equal row fits with exact values, close with rounding", {
  set.seed(5)
  n <- 5000
  d <- data.frame(x1 = round(runif(n), 2), x2 = runif(n), g = factor(sample(letters[1:3], n, TRUE)))
  eta <- sin(2 * pi * d$x1) + d$x2^2 + as.numeric(d$g) / 4 - 0.8
  d$yb <- rbinom(n, 1, plogis(eta))
  d$yc <- rpois(n, exp(eta))
  ctl <- function(...) gp_control(verbose = FALSE, seed = 1, inducing = 10, learn_inducing = TRUE, ...)
  for (fam in list(binomial(), poisson())) {
    # (SE kernel: the measured values below are for it)
    f <- if (fam$family == "binomial") yb ~ gp(x1, kernel = "se") + gp(x2, kernel = "se") + g
         else yc ~ gp(x1, kernel = "se") + gp(x2, kernel = "se") + g
    rows <- gpgam(f, data = d, family = fam, control = ctl(discrete = FALSE))
    exact <- gpgam(f, data = d, family = fam, control = ctl(discrete = TRUE, bins = Inf))
    auto <- gpgam(f, data = d, family = fam, control = ctl())
    expect_false(rows$discrete)
    expect_true(exact$discrete && auto$discrete)
    expect_identical(auto$control$batch_size, as.integer(n))
    expect_true(rows$converged && exact$converged && auto$converged)
    # exact values: the same fit (measured: ELBOs equal to 1e-11, predictions to 1e-11)
    expect_lt(abs(exact$elbo - rows$elbo), 1e-8 * abs(rows$elbo))
    nd <- d[1:200, ]
    pr <- predict(rows, nd, se.fit = TRUE)
    pe <- predict(exact, nd, se.fit = TRUE)
    pa <- predict(auto, nd, se.fit = TRUE)
    expect_lt(max(abs(pe$fit - pr$fit)), 1e-8 * max(pr$se.fit))
    expect_lt(max(abs(pe$se.fit / pr$se.fit - 1)), 1e-8)
    # x2 rounded to 1000 values: the fit moves by a small share of its se
    # (measured 0.002 binomial, 0.005 poisson)
    expect_lt(max(abs(pa$fit - pr$fit) / pr$se.fit), 0.02)
    expect_lt(max(abs(pa$se.fit / pr$se.fit - 1)), 0.01)
    # fitted mean responses need the latent variances (with the covariances
    # of the components): from the distinct values and observed value pairs,
    # equal to predict() at the rows when none is rounded; with x2 rounded,
    # the latent mean at the rows' inputs and its variance at their rounded
    # values
    r <- predict(exact, d, type = "response")
    expect_lt(max(abs(fitted(exact) - r) / r), 1e-9)
    expect_lt(max(abs(exact$linear.predictors - predict(exact, d, type = "link"))), 1e-9)
    r <- predict(auto, d, type = "response")
    expect_lt(max(abs(fitted(auto) - r) / r), 1e-5)
    expect_lt(max(abs(auto$linear.predictors - predict(auto, d, type = "link"))), 1e-9)
    fm <- gpgam(f, data = d, family = fam, control = ctl(discrete = TRUE, bins = Inf, posterior = "meanfield"))
    r <- predict(fm, d, type = "response")
    expect_lt(max(abs(fitted(fm) - r) / r), 1e-9)
  }
})

test_that("fits whose GP terms have at most two inputs keep the inducing inputs at their start by default", {
  set.seed(4)
  d <- data.frame(x = runif(6000))
  d$y <- sin(6 * d$x) + rnorm(6000, sd = 0.3)
  ctl <- function(...) gp_control(verbose = FALSE, seed = 1, inducing = 8, ...)
  inducing_inputs <- function(fit) fit$state$specs[[1]]$Z
  fixed <- gpgam(y ~ gp(x), data = d, control = ctl())
  moved <- gpgam(y ~ gp(x), data = d, control = ctl(learn_inducing = TRUE))
  rows <- gpgam(y ~ gp(x), data = d, control = ctl(discrete = FALSE))
  expect_true(fixed$discrete && moved$discrete && !rows$discrete)
  expect_gt(max(abs(inducing_inputs(moved) - inducing_inputs(fixed))), 1e-3)
  expect_equal(inducing_inputs(fixed), inducing_inputs(gpgam(y ~ gp(x), data = d, control = ctl(fixed = "inducing"))))
  # over the rows too (before: moved for 200 iterations under 5000 rows)
  expect_equal(inducing_inputs(rows), inducing_inputs(gpgam(y ~ gp(x), data = d, control = ctl(discrete = FALSE, fixed = "inducing"))))
  moved_rows <- gpgam(y ~ gp(x), data = d, control = ctl(discrete = FALSE, learn_inducing = TRUE))
  expect_gt(max(abs(inducing_inputs(moved_rows) - inducing_inputs(rows))), 1e-3)
  expect_error(gp_control(learn_inducing = NA), "learn_inducing")
})

test_that("inducing inputs move for a set number of iterations, then the fit converges without them", {
  set.seed(5)
  n <- 6000
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n))
  d$y <- sin(4 * d$x1) + d$x2 * d$x3 + rnorm(n, sd = 0.2)
  ctl <- function(...) gp_control(verbose = FALSE, seed = 1, inducing = 10, ...)
  inducing_inputs <- function(fit) fit$state$specs[[1]]$Z
  fixed <- gpgam(y ~ gp(x1, x2, x3), data = d, control = ctl(learn_inducing = FALSE))
  staged <- gpgam(y ~ gp(x1, x2, x3), data = d, control = ctl(learn_inducing = 5))
  dflt <- gpgam(y ~ gp(x1, x2, x3), data = d, control = ctl())
  expect_true(fixed$discrete && staged$discrete && dflt$discrete)
  # three inputs: the default moves them (for up to 200 iterations)
  expect_gt(max(abs(inducing_inputs(dflt) - inducing_inputs(fixed))), 1e-3)
  expect_gt(max(abs(inducing_inputs(staged) - inducing_inputs(fixed))), 1e-3)
  expect_gt(staged$iterations, 5)
  # the final gradient is over log variance, 3 log lengthscales and log noise only,
  # and it is a stationary point there
  expect_equal(length(staged$gradient), 5L)
  expect_false(any(grepl("inducing", names(staged$gradient))))
  expect_true(staged$converged)
  expect_lte(max(abs(staged$gradient)), staged$control$tol * n)
  expect_true(all(diff(staged$trace) >= -1e-8 * abs(staged$trace[-1])))
  # moving them for 5 iterations gains over never moving them
  expect_gt(staged$elbo, fixed$elbo)
  # 0 iterations is FALSE
  zero <- gpgam(y ~ gp(x1, x2, x3), data = d, control = ctl(learn_inducing = 0))
  expect_identical(zero$elbo, fixed$elbo)
  expect_identical(inducing_inputs(zero), inducing_inputs(fixed))
  expect_error(gp_control(learn_inducing = -1), "learn_inducing")
  expect_error(gp_control(learn_inducing = "yes"), "learn_inducing")
})

test_that("discretisation options are checked", {
  expect_error(gp_control(discrete = "yes"), "discrete")
  expect_error(gp_control(bins = 1), "bins")
  expect_error(gp_control(bins = NA), "bins")
  expect_error(vi_options(bins = c(10, 20)), "bins")
  expect_identical(vi_options()$bins, 1000)
  expect_true(is.na(vi_options()$discrete))
})

test_that("fits with their sums formed on a 2-worker PSOCK cluster equal the fit in one process", {
  set.seed(12)
  n <- 3000
  d <- data.frame(x1 = round(runif(n), 1), x2 = runif(n), x3 = runif(n), g = factor(sample(letters[1:5], n, TRUE)),
                  z = rnorm(n), wt = runif(n, 0.5, 2), off = rnorm(n, sd = 0.1))
  d$y <- sin(2 * pi * d$x1) + d$x2^2 + cos(3 * d$x2 * d$x3) + as.numeric(d$g) / 4 + 0.3 * d$z + d$off +
    rnorm(n, sd = 0.3)
  d$y[c(5, 77)] <- NA
  d$x2[9] <- NA
  f <- y ~ gp(x1) + gp(x2) + gp(x2, x3) + gp(g) + z + offset(off)
  # x1 (11 values) and (x2, x3) (fewer values than its 100^2 grid points) stay exact; x2 is rounded
  ctl <- gp_control(verbose = FALSE, seed = 3, inducing = 8, bins = 200, discrete = TRUE)
  f1 <- gpgam(f, data = d, weights = wt, control = ctl)
  old <- Sys.getenv("R_TESTS")
  Sys.setenv(R_TESTS = "")
  cl <- parallel::makeCluster(2)
  Sys.setenv(R_TESTS = old)
  on.exit(parallel::stopCluster(cl))
  ctl2 <- gp_control(verbose = FALSE, seed = 3, inducing = 8, bins = 200, cluster = cl)
  f2 <- gpgam(f, data = d, weights = wt, control = ctl2)
  expect_true(f1$converged && f1$discrete && f2$discrete)
  expect_identical(f2$elbo, f1$elbo)
  expect_identical(f2$trace, f1$trace)
  expect_identical(f2$state$m, f1$state$m)
  # fitted values: at the rows' inputs, interpolated from x2's grid in one
  # process (row_means_at_inputs()), evaluated there on a cluster
  expect_equal(fitted(f2), fitted(f1), tolerance = 1e-7)
  expect_equal(f2$control$distributed, 2L)
  expect_null(f2$control$cluster)
  expect_output(print(f2), "sums over 2 workers")
  expect_equal(unlist(parallel::clusterEvalQ(cl, length(ls(scalegp:::worker_store)))), c(0L, 0L))
  # exact values everywhere (bins = Inf): the union of the shards' values
  e1 <- gpgam(y ~ gp(x1) + gp(x2) + z, data = d, control = gp_control(verbose = FALSE, seed = 3, inducing = 8,
                                                                       bins = Inf, discrete = TRUE))
  e2 <- gpgam(y ~ gp(x1) + gp(x2) + z, data = d, control = gp_control(verbose = FALSE, seed = 3, inducing = 8,
                                                                       bins = Inf, cluster = cl))
  expect_identical(e2$elbo, e1$elbo)
  # binomial and Poisson: every evaluation's pass over the rows runs on the
  # workers (their sums per group of rows, added in order on the master)
  d$b <- as.numeric(d$y > 1)
  d$k <- round(exp(d$y / 2))
  for (fam in list(binomial(), poisson())) {
    fb <- if (fam$family == "binomial") b ~ gp(x1) + gp(x2) + gp(x2, x3) + gp(g) + z + offset(off)
          else k ~ gp(x1) + gp(x2, x3) + z
    # (non-integer weights: binomial warns about non-integer successes, as glm())
    nonint <- if (fam$family == "binomial") "non-integer numbers of successes" else NA
    expect_warning(b1 <- gpgam(fb, data = d, family = fam, weights = wt, control = ctl), nonint)
    expect_warning(b2 <- gpgam(fb, data = d, family = fam, weights = wt, control = ctl2), nonint)
    expect_true(b1$converged && b1$discrete && b2$discrete)
    expect_gt(b1$iterations, 3)
    expect_identical(b2$elbo, b1$elbo)
    expect_identical(b2$trace, b1$trace)
    expect_identical(b2$state$m, b1$state$m)
    expect_identical(b2$state$S, b1$state$S)
    expect_identical(fitted(b2), fitted(b1))
    expect_output(print(b2), "sums over 2 workers")
  }
  expect_equal(unlist(parallel::clusterEvalQ(cl, length(ls(scalegp:::worker_store)))), c(0L, 0L))
  expect_error(gpgam(y ~ gp(x1), data = d, control = gp_control(cluster = cl, batch_size = 100)), "'cluster'")
  expect_error(gpgam(y ~ gp(x1), data = d, control = gp_control(cluster = cl, discrete = FALSE)), "'cluster'")
  expect_error(gp_control(cluster = "cl"), "'cluster'")
})

test_that("small fits pass over distinct values with exact values: the same fit as over the rows", {
  set.seed(21)
  n <- 400
  d <- data.frame(x = round(runif(n), 3), z = rnorm(n), g = factor(sample(letters[1:3], n, TRUE)))
  d$yb <- rbinom(n, 1, plogis(1.5 * sin(5 * d$x) + 0.5 * d$z))
  d$yc <- rpois(n, exp(0.5 + sin(5 * d$x)))
  ctl <- function(...) gp_control(verbose = FALSE, seed = 1, ...)
  for (case in list(list(f = yb ~ gp(x) + z + g, fam = binomial()), list(f = yc ~ gp(x) + z, fam = poisson()))) {
    dflt <- gpgam(case$f, data = d, family = case$fam, control = ctl())
    rows <- gpgam(case$f, data = d, family = case$fam, control = ctl(discrete = FALSE))
    expect_true(dflt$discrete)
    expect_equal(dflt$discrete_bins, 0)
    expect_false(rows$discrete)
    expect_lt(abs(dflt$elbo - rows$elbo), 1e-8 * abs(rows$elbo))
    expect_lt(max(abs(fitted(dflt) / fitted(rows) - 1)), 1e-6)
    p1 <- predict(dflt, d[1:20, ], se.fit = TRUE)
    p0 <- predict(rows, d[1:20, ], se.fit = TRUE)
    expect_lt(max(abs(p1$fit - p0$fit) / p0$se.fit), 1e-5)
    expect_lt(max(abs(p1$se.fit / p0$se.fit - 1)), 1e-5)
    expect_output(print(summary(dflt)), "passes over distinct covariate values (exact)", fixed = TRUE)
  }
  # Gaussian: the same (measured: ELBOs to 8e-13 relative, predictions and
  # fitted values to 3e-11 of the se; fitted values near zero, so against the se)
  d$y <- sin(5 * d$x) + rnorm(n, sd = 0.3)
  dflt <- gpgam(y ~ gp(x) + z + g, data = d, control = ctl())
  rows <- gpgam(y ~ gp(x) + z + g, data = d, control = ctl(discrete = FALSE))
  expect_true(dflt$discrete)
  expect_equal(dflt$discrete_bins, 0)
  expect_false(rows$discrete)
  expect_lt(abs(dflt$elbo - rows$elbo), 1e-10 * abs(rows$elbo))
  p1 <- predict(dflt, d[1:20, ], se.fit = TRUE)
  p0 <- predict(rows, d[1:20, ], se.fit = TRUE)
  expect_lt(max(abs(p1$fit - p0$fit) / p0$se.fit), 1e-8)
  expect_lt(max(abs(p1$se.fit / p0$se.fit - 1)), 1e-8)
  expect_lt(max(abs(fitted(dflt) - fitted(rows))), 1e-8 * min(p0$se.fit))
  # a term of three inputs stays over the rows under 5000 rows
  d$x2 <- runif(n)
  d$x3 <- runif(n)
  expect_false(gpgam(yb ~ gp(x, x2, x3), data = d, family = binomial(), control = ctl(iterations = 5))$discrete)
})
