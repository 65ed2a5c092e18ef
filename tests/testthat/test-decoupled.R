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

test_that("a Gaussian minibatch fit ends at the exact optimum of the mean (mean_solve)", {
  d <- dec_data()
  ctl <- gp_control(verbose = FALSE, inducing = 15, fixed = c("kernel", "inducing", "sigma"), sigma = 0.3,
                    iterations = 5, seed = 3, threads = 1)
  fml <- y ~ gp(x1, x2, lengthscale = 1, variance = 1) + z
  fv <- gpgam(fml, data = d, control = ctl)  # all rows: q optimal, the Titsias optimum
  mb <- modifyList(ctl, list(mean_basis = 15, batch_size = 100))
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
              control = modifyList(ctl, list(mean_basis = 40, batch_size = 100, mean_solve = TRUE)))
  fa <- gpgam(fml2, data = d, inference = "decoupled",
              control = modifyList(ctl, list(mean_basis = 40, batch_size = 100, mean_solve = FALSE)))
  sc <- fd$terms$gp[[1]]$scaling
  A <- sweep(sweep(fd$state$basis$A, 2, sc$scale, "*"), 2, sc$center, "+")
  expect_equal(nrow(A), 25)
  fz <- gpgam(y ~ gp(x1, x2, lengthscale = 0.4, variance = 1, inducing = rbind(fd$params$gp[[1]]$inducing, A)) + z,
              data = d, control = ctl)
  expect_close(predict(fd, nd), predict(fz, nd), 1e-5)
  expect_gt(max(abs(predict(fa, nd) - predict(fz, nd))), 0.1)  # five Adam steps are far from it
  # with mean bases and the noise learned: the solve and the noise rounds raise the ELBO
  ctl2 <- gp_control(verbose = FALSE, inducing = 10, mean_basis = 150, batch_size = 100, iterations = 50,
                     seed = 1, threads = 1)
  f1 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = modifyList(ctl2, list(mean_solve = TRUE)))
  f0 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = modifyList(ctl2, list(mean_solve = FALSE)))
  expect_gt(as.numeric(logLik(f1)), as.numeric(logLik(f0)) + 100)
  # by default the solve is done when it is cheap
  f2 <- gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = ctl2)
  expect_identical(as.numeric(logLik(f2)), as.numeric(logLik(f1)))
  expect_error(gp_control(mean_solve = NA), "'mean_solve'")
  expect_error(gp_control(mean_solve = "yes"), "'mean_solve'")
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
  expect_lt(abs(mean(td[, 1])), 1e-8)
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
