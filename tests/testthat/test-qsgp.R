# inference = "qsgp" at the R level: the ELBO estimator and its gradient
# against the closed-form ELBO of the random-feature model (written here in
# plain R) and its finite-difference gradient, the closed-form optimum of
# the weight-space model with all rows and features, the methods on a fit,
# and bad input.

qs_data <- function(n = 300, seed = 1) {
  set.seed(seed)
  x1 <- runif(n, -2, 2)
  z <- rnorm(n)
  data.frame(x1 = x1, z = z, y = sin(2 * x1) + 0.3 * z + rnorm(n, sd = 0.3))
}

qs_ctl <- function(...) gp_control(verbose = FALSE, threads = 1, seed = 7, ...)

# The internal design, response and feature matrix of a fit (from its
# stored frequencies), written independently of the C++ core.
qs_model <- function(fit) {
  st <- fit$state
  X <- scalegp:::new_design(fit, NULL, stats::na.pass, mf = fit$model)$X
  ysc <- fit$scaling$y
  y <- (fit$y - ysc$center) / ysc$scale
  Phi <- do.call(cbind, lapply(st$specs, function(s) {
    Xi <- X[, s$cols + 1L, drop = FALSE]
    if (s$kind == "linear") return(sweep(Xi, 2, s$prior_sd, "*"))
    om <- sweep(s$eps, 2, rep(exp(s$log_ls), length.out = ncol(Xi)), "/")
    T <- Xi %*% t(om)
    cbind(cos(T), sin(T)) / sqrt(nrow(s$eps))
  }))
  prec <- unlist(lapply(st$specs, function(s)
    if (s$kind == "linear") rep(1, length(s$cols)) else rep(exp(-s$log_var), 2 * nrow(s$eps))))
  list(X = X, y = y, Phi = Phi, prec = prec)
}

# Eq. 1-2 of Evans and Nair (2018): E_q log p(y | w) - KL(q || p), mean field.
qs_elbo <- function(Phi, y, prec, mu, rho, log_noise) {
  s2 <- 1e-6 + exp(log_noise)
  c2 <- exp(2 * rho)
  a <- drop(Phi %*% mu)
  v <- drop(Phi^2 %*% c2)
  sum(-0.5 * log(2 * pi * s2) - ((y - a)^2 + v) / (2 * s2)) -
    0.5 * sum(prec * (mu^2 + c2) - 2 * rho - log(prec) - 1)
}

test_that("the ELBO estimator averages to the closed-form ELBO, and its gradient to the exact gradient", {
  d <- qs_data(60)
  fit <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
               control = qs_ctl(features = 16, feature_batch = 16, iterations = 50, batch_size = 60))
  st <- fit$state
  md <- qs_model(fit)
  m <- length(st$mu)
  set.seed(3)  # a posterior away from the fit's
  mu <- st$mu + rnorm(m, sd = 0.3)
  rho <- st$rho + runif(m, -0.5, 0.3)
  exact <- qs_elbo(md$Phi, md$y, md$prec, mu, rho, st$log_noise)
  specs <- scalegp:::qsgp_core_specs(st)
  specs[[1]]$learn_kernel <- TRUE  # (the lengthscale gradient is computed for a learned kernel)
  # all rows and features: the estimator is the exact ELBO
  full <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 60, 16, 1, 1)
  expect_close(full$value, exact, 1e-9 * abs(exact))
  expect_close(full$exact, exact, 1e-9 * abs(exact))
  # the exact gradient by central differences: mu, rho, log variance, log lengthscale, log noise
  f <- function(x) {
    sp <- st$specs
    sp[[1]]$log_var <- x[2 * m + 1]
    sp[[1]]$log_ls <- x[2 * m + 2]
    f2 <- fit
    f2$state$specs <- sp
    m2 <- qs_model(f2)
    qs_elbo(m2$Phi, md$y, m2$prec, x[1:m], x[m + 1:m], x[2 * m + 3])
  }
  x0 <- c(mu, rho, st$specs[[1]]$log_var, st$specs[[1]]$log_ls, st$log_noise)
  h <- 1e-4
  fd <- vapply(seq_along(x0), function(j) {
    e <- replace(numeric(length(x0)), j, h)
    (f(x0 + e) - f(x0 - e)) / (2 * h)
  }, 0)
  expect_true(all(abs(full$gradient - fd) < 1e-5 * pmax(abs(fd), 1)))
  expect_gt(abs(fd[2 * m + 2]), 1)  # (a lengthscale gradient to test)
  # sampled rows and features: unbiased, within Monte Carlo error
  est <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 8, 4, 40000, 5)
  expect_lt(abs(est$value - exact), 4 * est$value_se)
  expect_lt(est$value_se, 0.02 * abs(exact))  # (an error bar small enough to catch a wrong factor)
  expect_true(all(abs(est$gradient - fd) < 4 * est$gradient_se + 1e-5 * pmax(abs(fd), 1)))
  expect_gt(min(est$gradient_se[1:16]), 0)  # (the gp() weights were sampled)
})

test_that("the fit's ELBO is the closed-form ELBO at its posterior, and its fitted values and predictions agree", {
  d <- qs_data(200)
  fit <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
               control = qs_ctl(features = 64, feature_batch = 16, iterations = 300, batch_size = 50))
  expect_s3_class(fit, "gpgam_qsgp")
  expect_false(fit$converged)
  expect_match(fit$stop, "no stationary-point test")
  st <- fit$state
  md <- qs_model(fit)
  elbo <- qs_elbo(md$Phi, md$y, md$prec, st$mu, st$rho, st$log_noise)
  expect_close(as.numeric(logLik(fit)), elbo - 200 * log(fit$scaling$y$scale), 1e-8 * abs(elbo))
  ysc <- fit$scaling$y
  expect_close(fitted(fit), ysc$center + ysc$scale * drop(md$Phi %*% st$mu), 1e-9)
  p <- predict(fit, d[1:20, ], se.fit = TRUE)
  expect_close(p$fit, fitted(fit)[1:20], 1e-9)
  expect_close(p$se.fit, ysc$scale * sqrt(drop(md$Phi[1:20, ]^2 %*% st$c2)), 1e-9)
  # terms: centred over the data, the intercept carries their means
  tt <- predict(fit, d[1:20, ], type = "terms", se.fit = TRUE)
  expect_close(rowSums(tt$fit) + attr(tt$fit, "constant"), p$fit, 1e-8)
  expect_close(mean(predict(fit, type = "terms")[, "gp(x1)"]), 0, 1e-10)
  expect_true(all(tt$se.fit[, "gp(x1)"] > 0))
})

test_that("with all rows and features a Gaussian fit converges to the closed-form optimum of the weight-space model", {
  # (no intercept: AdaGrad is slow on the ill-conditioned problem an
  # uncentred intercept beside the features makes, condition number ~1e7)
  d <- qs_data(120)
  fit <- gpgam(y ~ gp(x1) - 1, data = d, inference = "qsgp",
               control = qs_ctl(features = 20, feature_batch = 20, batch_size = 120, iterations = 10000,
                                final_rate = 1, variational_rate = 0.5, fixed = c("kernel", "sigma"), sigma = 0.3))
  st <- fit$state
  md <- qs_model(fit)
  s2 <- 1e-6 + exp(st$log_noise)
  A <- crossprod(md$Phi) / s2 + diag(md$prec)
  mu <- drop(solve(A, crossprod(md$Phi, md$y) / s2))
  c2 <- 1 / diag(A)  # the mean-field optimum (Evans and Nair 2018, Prop. 1)
  expect_close(st$mu, mu, 1e-6 * max(abs(mu)))
  expect_close(st$c2, c2, 1e-9 * max(c2))
  opt <- qs_elbo(md$Phi, md$y, md$prec, mu, 0.5 * log(c2), st$log_noise)
  expect_close(as.numeric(logLik(fit)) + 120 * log(fit$scaling$y$scale), opt, 1e-7 * abs(opt))
})

test_that("summary, predict, plot, logLik, simulate, anova and gp_check run on a qsgp fit", {
  d <- qs_data(400)
  d$x2 <- runif(400)
  fit <- gpgam(y ~ gp(x1) + gp(x2) + z, data = d, inference = "qsgp",
               control = qs_ctl(features = 256, feature_batch = 64, iterations = 200))
  s <- summary(fit)
  out <- capture.output(print(s))
  expect_true(any(grepl("quadruply stochastic", out)))
  expect_true(any(grepl("no stationary-point test", out)))
  expect_equal(nrow(s$s.table), 2)
  expect_true(all(is.finite(s$s.table[, "Chi.sq"])))
  expect_equal(fit$params$gp[["gp(x1)"]]$basis, 256)
  p <- predict(fit, d[1:10, ], type = "terms", se.fit = TRUE)
  expect_equal(dim(p$fit), c(10, 3))
  expect_true(all(is.finite(p$se.fit)))
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(fit))
  ll <- logLik(fit)
  expect_true(is.finite(ll))
  sim <- simulate(fit, nsim = 2, seed = 1)
  expect_equal(dim(sim), c(400, 2))
  expect_true(is.finite(coef(fit)[["z"]]))
  expect_equal(dim(vcov(fit)), c(2, 2))
  a <- anova(fit)
  expect_true(all(is.finite(a$s.table[, "Chi.sq"])))
  expect_output(gp_check(fit))
})

test_that("qsgp fits are reproducible and do not depend on the number of threads", {
  d <- qs_data(3000)
  f1 <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
              control = gp_control(verbose = FALSE, threads = 1, seed = 4, features = 512, iterations = 100))
  f2 <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
              control = gp_control(verbose = FALSE, threads = 2, seed = 4, features = 512, iterations = 100))
  expect_identical(f1$state$mu, f2$state$mu)
  expect_identical(f1$trace, f2$trace)
  expect_identical(fitted(f1), fitted(f2))
})

test_that("bad qsgp input gives errors naming the argument", {
  expect_error(qsgp_options(features = 100, feature_batch = 200), "'feature_batch'")
  expect_error(qsgp_options(features = 101), "'features'.*even")
  expect_error(qsgp_options(features = 0), "'features'")
  expect_error(qsgp_options(features = 2.5), "'features'")
  expect_error(qsgp_options(feature_batch = -3), "'feature_batch'")
  expect_error(qsgp_options(feature_batch = 10.5), "'feature_batch'")
  expect_error(qsgp_options(variational_rate = 0), "'variational_rate'")
  expect_error(qsgp_options(final_rate = 2), "'final_rate'")
  expect_error(qsgp_options(freeze = 1), "'freeze'")
  expect_error(gp_control(features = 33), "'features'")
  d <- qs_data(100)
  expect_error(gpgam(y ~ gp(x1), data = d, inference = "qsgp", control = qs_ctl(features = 64, feature_batch = 128)),
               "'feature_batch'")
  d$b <- as.integer(d$y > 0)
  expect_error(gpgam(b ~ gp(x1), data = d, family = binomial(), inference = "qsgp", control = qs_ctl()), "'family'")
  d$g <- factor(sample(letters[1:3], 100, TRUE))
  expect_error(gpgam(y ~ gp(x1, by = g) + g, data = d, inference = "qsgp", control = qs_ctl()), "'formula'.*'by'")
  expect_error(gpgam(y ~ gp(g), data = d, inference = "qsgp", control = qs_ctl()), "'formula'.*random effect")
  expect_error(gpgam(y ~ gp(x1), data = d, inference = "vi", control = qs_ctl(features = 64)), "'features'")
})
