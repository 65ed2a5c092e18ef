# inference = "decoupled" at the R level: the SVGP limit, the mean bases'
# part of predictions, terms and coefficients, and bad input.

dec_data <- function(n = 600, seed = 1) {
  set.seed(seed)
  x1 <- runif(n, -2, 2)
  x2 <- runif(n, -2, 2)
  z <- rnorm(n)
  data.frame(x1 = x1, x2 = x2, z = z, y = sin(2 * x1) * cos(x2) + 0.3 * z + rnorm(n, sd = 0.2))
}

test_that("with no further mean bases the fit is the SVGP fit at the same hyperparameters", {
  d <- dec_data()
  ctl <- gp_control(verbose = FALSE, inducing = 15, fixed = c("kernel", "inducing", "sigma"), sigma = 0.3,
                    iterations = 5, seed = 3, threads = 1)
  fv <- gpgam(y ~ gp(x1, x2, lengthscale = 1, variance = 1) + z, data = d, control = ctl)
  fd <- gpgam(y ~ gp(x1, x2, lengthscale = 1, variance = 1) + z, data = d, inference = "decoupled",
              control = modifyList(ctl, list(mean_basis = 15)))
  expect_s3_class(fd, "gpgam_decoupled")
  nd <- dec_data(50, seed = 2)
  pv <- predict(fv, nd, se.fit = TRUE)
  pd <- predict(fd, nd, se.fit = TRUE)
  expect_close(pd$fit, pv$fit, 1e-6)
  expect_close(pd$se.fit, pv$se.fit, 1e-6)
  expect_close(logLik(fd), logLik(fv), 1e-6 * abs(logLik(fv)))
  expect_close(coef(fd), coef(fv), 1e-6)
})

test_that("a binomial fit over all rows reaches a stationary point by L-BFGS, and its SVGP limit is the vi fit", {
  d <- dec_data(300, seed = 4)
  d$b <- rbinom(300, 1, plogis(3 * sin(2 * d$x1) - 0.5 + d$x2 / 2))
  # no further mean bases, kernel and inducing inputs held: the vi fit (q found by the same inner loop)
  ctl <- gp_control(verbose = FALSE, inducing = 15, fixed = c("kernel", "inducing"), seed = 3, threads = 1)
  fv <- gpgam(b ~ gp(x1, x2, lengthscale = 1, variance = 2) + z, data = d, family = binomial(), control = ctl)
  fd <- gpgam(b ~ gp(x1, x2, lengthscale = 1, variance = 2) + z, data = d, family = binomial(),
              inference = "decoupled", control = modifyList(ctl, list(mean_basis = 15)))
  expect_close(logLik(fd), logLik(fv), 1e-6 * abs(logLik(fv)))
  nd <- dec_data(20, seed = 5)
  expect_close(predict(fd, nd), predict(fv, nd), 1e-4)
  # defaults: every parameter free, the mean bases placed at the start; the
  # gradient test passes (Adam steps stopped short of it before)
  ff <- gpgam(b ~ gp(x1, x2), data = d, family = binomial(), inference = "decoupled",
              control = gp_control(verbose = FALSE, seed = 1))
  expect_true(ff$converged)
  expect_identical(ff$stop, "stationary point")
  expect_lt(ff$iterations, 200)
  fv0 <- gpgam(b ~ gp(x1, x2), data = d, family = binomial(), control = gp_control(verbose = FALSE, seed = 1,
                                                                                     inducing = ff$params$gp[[1]]$basis))
  expect_gt(ff$objective + ff$log_prior, fv0$objective + fv0$log_prior - 0.05)
  # bit-identical for one and two threads
  f1 <- gpgam(b ~ gp(x1, x2), data = d, family = binomial(), inference = "decoupled",
              control = gp_control(verbose = FALSE, seed = 1, threads = 1))
  f2 <- gpgam(b ~ gp(x1, x2), data = d, family = binomial(), inference = "decoupled",
              control = gp_control(verbose = FALSE, seed = 1, threads = 2))
  expect_identical(f1$trace, f2$trace)
  expect_identical(predict(f1, nd), predict(f2, nd))
})

test_that("a Gaussian minibatch fit ends at the exact optimum of the mean (mean_solve)", {
  d <- dec_data()
  ctl <- gp_control(verbose = FALSE, inducing = 15, fixed = c("kernel", "inducing", "sigma"), sigma = 0.3,
                    iterations = 5, seed = 3, threads = 1)
  fml <- y ~ gp(x1, x2, lengthscale = 1, variance = 1) + z
  fv <- gpgam(fml, data = d, control = ctl)  # all rows: q optimal, the Titsias optimum
  mb <- modifyList(ctl, list(mean_basis = 15, batch_size = 100, pilot = 0))
  fs <- gpgam(fml, data = d, inference = "decoupled", control = modifyList(mb, list(mean_solve = TRUE)))
  nd <- dec_data(50, seed = 2)
  pv <- predict(fv, nd, se.fit = TRUE)
  ps <- predict(fs, nd, se.fit = TRUE)
  expect_close(ps$fit, pv$fit, 1e-6)
  expect_close(ps$se.fit, pv$se.fit, 1e-6)
  expect_close(logLik(fs), logLik(fv), 1e-8 * abs(logLik(fv)))
  # with mean bases: the exact mean is that of the Titsias optimum with the
  # inducing inputs and the mean bases together as inducing inputs (the
  # projection of kernel ridge regression on their span)
  fml2 <- y ~ gp(x1, x2, lengthscale = 0.4, variance = 1) + z
  fd <- gpgam(fml2, data = d, inference = "decoupled",
              control = modifyList(ctl, list(mean_basis = 40, batch_size = 100, mean_solve = TRUE, pilot = 0)))
  fa <- gpgam(fml2, data = d, inference = "decoupled",
              control = modifyList(ctl, list(mean_basis = 40, batch_size = 100, mean_solve = FALSE, pilot = 0)))
  sc <- fd$terms$gp[[1]]$scaling
  A <- sweep(sweep(fd$state$basis$A, 2, sc$scale, "*"), 2, sc$center, "+")
  expect_equal(nrow(A), 25)
  fz <- gpgam(y ~ gp(x1, x2, lengthscale = 0.4, variance = 1, inducing = rbind(fd$params$gp[[1]]$inducing, A)) + z,
              data = d, control = ctl)
  expect_close(predict(fd, nd), predict(fz, nd), 1e-5)
  expect_gt(max(abs(predict(fa, nd) - predict(fz, nd))), 0.1)  # five Adam steps are far from it
  # with mean bases and the noise learned: the solve and the noise rounds raise the ELBO
  ctl2 <- gp_control(verbose = FALSE, inducing = 10, mean_basis = 150, batch_size = 100, iterations = 50,
                     seed = 1, threads = 1, pilot = 0)
  f1 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = modifyList(ctl2, list(mean_solve = TRUE)))
  f0 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = modifyList(ctl2, list(mean_solve = FALSE)))
  expect_gt(as.numeric(logLik(f1)), as.numeric(logLik(f0)) + 100)
  # by default the solve is done when it is cheap
  f2 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = ctl2)
  expect_identical(as.numeric(logLik(f2)), as.numeric(logLik(f1)))
  expect_error(gp_control(mean_solve = NA), "'mean_solve'")
  expect_error(gp_control(mean_solve = "yes"), "'mean_solve'")
})

test_that("after a pilot fit the mean and q are the closed-form optimum at its kernel and noise", {
  d <- dec_data()
  # (jitter 1e-8: the 30 bases of this smooth kernel make K ill-conditioned,
  # and the oracle below adds the jitter to all 30 where the decoupled fit
  # adds it to the 15 inducing points)
  ctl <- gp_control(verbose = FALSE, inducing = 15, mean_basis = 30, batch_size = 100, seed = 3, threads = 1,
                    jitter = 1e-8)
  set.seed(11)
  u1 <- runif(2)
  set.seed(11)
  fp <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = ctl)
  expect_identical(runif(2), u1)  # R's random numbers untouched
  # the pilot (all 600 rows here) is the full-batch vi fit whose inducing inputs move for 50 iterations
  expect_equal(fp$pilot$rows, nrow(d))
  fv <- gpgam(y ~ gp(x1, x2) + z, data = d,
              control = gp_control(verbose = FALSE, inducing = 15, learn_inducing = 50, seed = 3, threads = 1,
                                   jitter = 1e-8))
  gp <- fp$params$gp[[1]]
  expect_close(gp$lengthscale, fv$params$gp[[1]]$lengthscale, 1e-10)
  expect_close(gp$variance, fv$params$gp[[1]]$variance, 1e-10)
  expect_close(gp$inducing, fv$params$gp[[1]]$inducing, 1e-10)
  expect_close(sigma(fp), sigma(fv), 1e-10)
  # no iterations; the gradient in the mean coefficients vanishes
  expect_equal(fp$iterations, 0L)
  expect_true(fp$converged)
  expect_lt(max(abs(fp$gradient)), 1e-6)
  # (print() says what converged: the posterior at the pilot's hyperparameters, not a stationary point of all)
  expect_match(scalegp:::convergence_line(fp), "closed form, at the pilot fit's kernel, noise and inducing inputs")
  expect_equal(unname(fp$mean_basis[c("total", "active")]), c(30, 15))
  # the oracle: the Titsias optimum with the inducing inputs and the mean
  # bases together as inducing inputs, at the same kernel and noise
  sc <- fp$terms$gp[[1]]$scaling
  A <- sweep(sweep(fp$state$basis$A, 2, sc$scale, "*"), 2, sc$center, "+")
  Zall <- rbind(gp$inducing, A)
  fz <- gpgam(stats::as.formula(sprintf("y ~ gp(x1, x2, lengthscale = c(%.17g, %.17g), variance = %.17g, inducing = Zall) + z",
                                        gp$lengthscale[1], gp$lengthscale[2], gp$variance)),
              data = d, control = gp_control(verbose = FALSE, fixed = c("kernel", "inducing", "sigma"),
                                                    sigma = sigma(fp), threads = 1, jitter = 1e-8))
  nd <- dec_data(50, seed = 2)
  expect_close(predict(fp, nd), predict(fz, nd), 1e-5)
  # the same fit on two threads; pilot = 0 is the paper's algorithm (minibatch steps)
  f2 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = modifyList(ctl, list(threads = 2)))
  expect_identical(predict(f2, nd), predict(fp, nd))
  f0 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled",
              control = modifyList(ctl, list(pilot = 0, iterations = 20)))
  expect_null(f0$pilot)
  expect_equal(f0$iterations, 20L)
  # a pilot of fewer rows
  f1 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = modifyList(ctl, list(pilot = 300)))
  expect_equal(f1$pilot$rows, 300)
  expect_gt(max(abs(f1$params$gp[[1]]$lengthscale - gp$lengthscale)), 1e-4)
  # by default no pilot when a given mean_basis makes the closed form too costly (n M_alpha^2 > 2e12)
  rows <- function(n, mb, pilot = NULL)
    scalegp:::decoupled_pilot_rows(list(batch_size = 1024L, options = list(mean_basis = mb, pilot = pilot)),
                                   list(lik = "gaussian", n = n))
  expect_equal(c(rows(2e5, 16384), rows(2e5, 3000), rows(2e5, NULL), rows(2e5, 16384, 2000), rows(3000, NULL),
                 rows(1500, NULL), rows(7373, NULL), rows(12288, NULL), rows(12291, NULL), rows(3000, NULL, 2500)),
               c(0, 4096, 4096, 2000, 2048, 1500, 2458, 4096, 4096, 2500))
  expect_error(gp_control(pilot = 10), "'pilot'")
  expect_error(gp_control(pilot = 100.5), "'pilot'")
  expect_error(gp_control(pilot = -1), "'pilot'")
  d$b <- as.numeric(d$y > 0)
  expect_warning(gpgam(b ~ gp(x1, x2), data = d, family = binomial(), inference = "decoupled",
                       control = modifyList(ctl, list(pilot = 100, iterations = 3))), "'pilot'")
})

test_that("over few distinct inputs the fit passes over the values and equals the fit over the rows", {
  # gp(x1, x2) over 12 x 12 values (at most 144 of 600 rows), a continuous z
  # and a factor: the value pass with the mean bases as a shift by value,
  # the pair counts of the gp term against z and f, and the mean system by
  # value, against the same fit over the rows (bins = Inf: no rounding, so
  # the two are the same model)
  set.seed(4)
  n <- 600
  d <- data.frame(x1 = sample(seq(-2, 2, length.out = 12), n, TRUE), x2 = sample(seq(-2, 2, length.out = 12), n, TRUE),
                  z = rnorm(n), f = factor(sample(c("a", "b", "c"), n, TRUE)))
  d$y <- sin(2 * d$x1) * cos(d$x2) + 0.3 * d$z + 0.2 * (d$f == "b") + rnorm(n, sd = 0.2)
  d$w <- runif(n, 0.5, 2)
  nd <- d[1:40, ]
  nd$x1 <- nd$x1 + 0.05
  fml <- y ~ gp(x1, x2) + z + f
  both <- function(ctl) {
    fr <- gpgam(fml, data = d, weights = w, inference = "decoupled", control = modifyList(ctl, list(discrete = FALSE)))
    fv <- gpgam(fml, data = d, weights = w, inference = "decoupled",
                control = modifyList(ctl, list(discrete = TRUE, bins = Inf)))
    expect_equal(fr$discrete_values, 0)
    expect_equal(fv$discrete_values, nrow(unique(d[c("x1", "x2")])))
    pr <- predict(fr, nd, se.fit = TRUE)
    pv <- predict(fv, nd, se.fit = TRUE)
    expect_lt(max(abs(pv$fit - pr$fit) / abs(pr$fit)), tol)
    expect_lt(max(abs(pv$se.fit - pr$se.fit) / pr$se.fit), tol)
    expect_lt(abs(as.numeric(logLik(fv)) / as.numeric(logLik(fr)) - 1), tol)
    expect_lt(max(abs(fitted(fv) - fitted(fr))), tol)
    list(rows = fr, values = fv)
  }
  # the closed form after a pilot fit (the pilot is the same vi fit both times)
  tol <- 1e-9
  ctl <- gp_control(verbose = FALSE, inducing = 10, mean_basis = 60, batch_size = 100, pilot = 300, seed = 3,
                    threads = 1)
  cf <- both(ctl)
  expect_equal(cf$values$iterations, 0L)
  expect_lt(max(abs(cf$values$gradient)), 1e-6)  # the mean coefficients at their optimum
  # all rows per iteration: the ELBO and its gradient (L-BFGS, a few iterations from the same start)
  tol <- 1e-7
  fb <- both(gp_control(verbose = FALSE, inducing = 10, mean_basis = 40, iterations = 8, seed = 3, threads = 1))
  expect_lt(max(abs(fb$values$gradient - fb$rows$gradient)), 1e-6 * max(1, abs(fb$rows$gradient)))
  # rounded (the default bins) from 5000 rows; too many distinct values: the rows
  expect_equal(gpgam(y ~ gp(x1, x2) + z, data = dec_data(), inference = "decoupled",
                     control = gp_control(verbose = FALSE, inducing = 10, mean_basis = 20, iterations = 3,
                                          discrete = TRUE, threads = 1))$discrete_values, 0)
  expect_error(decoupled_options(bins = 1), "'bins'")
  expect_error(decoupled_options(discrete = "yes"), "'discrete'")
})

test_that("the mean bases enter the predictor, the terms and the intercept consistently", {
  d <- dec_data(800)
  fit <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled",
               control = gp_control(verbose = FALSE, inducing = 10, mean_basis = 200, iterations = 300, seed = 1,
                                    threads = 1))
  expect_equal(unname(fit$mean_basis[c("total", "inducing", "active")]), c(200, 10, 190))
  nd <- dec_data(40, seed = 5)
  p <- predict(fit, nd, se.fit = TRUE)
  tm <- predict(fit, nd, type = "terms", se.fit = TRUE)
  # link = intercept + terms (the centred gp term, the parametric term)
  expect_close(rowSums(tm$fit) + attr(tm$fit, "constant"), p$fit, 1e-8)
  # the gp term is centred over the data rows
  td <- predict(fit, d, type = "terms")
  expect_lt(abs(mean(td[, "gp(x1, x2)"])), 1e-8)
  # the mean bases carry part of the fit: without them the predictions differ
  b <- fit$state$basis
  expect_gt(max(abs(b$a)), 0)
  r <- scalegp:::.decoupled_mean(fit$state$specs[[b$index]], b$A, b$a,
                                 scalegp:::new_design(fit, nd, stats::na.pass)$X, 1L)
  expect_gt(sd(r), 0.01)
  # the fitted values are the predictions at the data
  expect_close(predict(fit, d[1:20, ]), fitted(fit)[1:20], 1e-8)
})

test_that("the decoupled engine refuses what it cannot fit, naming the argument", {
  d <- dec_data(200)
  ctl <- gp_control(verbose = FALSE, inducing = 10, iterations = 5)
  expect_error(gpgam(y ~ gp(x1) + gp(x2), data = d, inference = "decoupled", control = ctl),
               "'formula'.*one gp\\(\\) term")
  expect_error(gpgam(y ~ gp(x1, x2), data = d, inference = "decoupled",
                     control = gp_control(verbose = FALSE, inducing = 10, mean_basis = 5)),
               "'mean_basis'.*at least the number of inducing points")
  expect_error(gp_control(mean_basis = 10.5), "'mean_basis'")
  expect_error(gp_control(add_basis = 0), "'add_basis'")
  expect_error(gp_control(kl_columns = -1), "'kl_columns'")
  expect_error(gp_control(rate_decay = -1), "'rate_decay'")
  d$g <- factor(sample(letters[1:3], nrow(d), TRUE))
  expect_error(gpgam(y ~ gp(x1, by = g) + g, data = d, inference = "decoupled", control = ctl), "'formula'")
  expect_warning(gpgam(y ~ gp(x1), data = d[1:30, ], inference = "decoupled",
                       control = gp_control(verbose = FALSE, inducing = 5, mean_basis = 100, iterations = 3)),
                 "'mean_basis' = 100 exceeds")
})
