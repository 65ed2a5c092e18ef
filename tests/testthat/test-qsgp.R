# inference = "qsgp" at the R level: the ELBO estimator and its gradient
# against the closed-form ELBO of the random-feature model (written here in
# plain R) and its finite-difference gradient, the closed-form optimum of
# the weight-space model with all rows and features, the methods on a fit,
# and bad input; binomial and Poisson (the tangent-line bound): the
# estimator against the expected log-likelihood by quadrature, fits against
# the truth and inference = "vi", fitted values and response predictions.

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

# The gradient of f at x0 by central differences of step h.
qs_central_diff <- function(f, x0, h = 1e-4) {
  vapply(seq_along(x0), function(j) {
    e <- replace(numeric(length(x0)), j, h)
    (f(x0 + e) - f(x0 - e)) / (2 * h)
  }, 0)
}

# The kernel of a spec (SE, Matern 3/2 or 5/2) between the rows of A and B (columns: the spec's inputs).
qs_gram_kernel <- function(s, A, B) {
  ls <- rep(exp(s$log_ls), length.out = ncol(A))
  D2 <- outer(rowSums(sweep(A, 2, ls, "/")^2), rowSums(sweep(B, 2, ls, "/")^2), "+") -
    2 * sweep(A, 2, ls^2, "/") %*% t(B)
  r <- sqrt(pmax(D2, 0))
  exp(s$log_var) * switch(s$kernel, se = exp(-0.5 * r^2), matern32 = (1 + sqrt(3) * r) * exp(-sqrt(3) * r),
                          matern52 = (1 + sqrt(5) * r + 5 * r^2 / 3) * exp(-sqrt(5) * r))
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
  fd <- qs_central_diff(f, x0)
  expect_true(all(abs(full$gradient - fd) < 1e-5 * pmax(abs(fd), 1)))
  expect_gt(abs(fd[2 * m + 2]), 1)  # (a lengthscale gradient to test)
  # sampled rows and features: unbiased, within Monte Carlo error
  est <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 8, 4, 40000, 5)
  expect_lt(abs(est$value - exact), 4 * est$value_se)
  expect_lt(est$value_se, 0.02 * abs(exact))  # (an error bar small enough to catch a wrong factor)
  expect_true(all(abs(est$gradient - fd) < 4 * est$gradient_se + 1e-5 * pmax(abs(fd), 1)))
  expect_gt(min(est$gradient_se[1:16]), 0)  # (the gp() weights were sampled)
  # with the control variate on 30 support rows: still unbiased; all rows and features: exact
  full_cv <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 60, 16, 1, 1,
                                      control_rows = 30)
  expect_close(full_cv$value, exact, 1e-9 * abs(exact))
  expect_true(all(abs(full_cv$gradient - fd) < 1e-5 * pmax(abs(fd), 1)))
  cv <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 8, 4, 40000, 5,
                                 control_rows = 30)
  expect_lt(abs(cv$value - exact), 4 * cv$value_se)
  expect_true(all(abs(cv$gradient - fd) < 4 * cv$gradient_se + 1e-5 * pmax(abs(fd), 1)))
})

test_that("the control variate (Evans and Nair 2018, Prop. 3) cuts the variance of the mean's gradient, unbiased", {
  # near the posterior of a fit, 256 features of which 16 sampled, 50 of 400 rows per draw
  d <- qs_data(400)
  fit <- gpgam(y ~ gp(x1), data = d, inference = "qsgp",
               control = qs_ctl(features = 256, feature_batch = 16, iterations = 1000, batch_size = 50))
  st <- fit$state
  md <- qs_model(fit)
  m <- length(st$mu)
  specs <- scalegp:::qsgp_core_specs(st)
  est <- function(cv, reps = 5000)
    scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 400), rep(0, 400), specs, st$log_noise, st$mu, st$rho, 50, 16, reps,
                             5, control_rows = cv)
  s2 <- 1e-6 + exp(st$log_noise)
  g_mu <- drop(crossprod(md$Phi, md$y - md$Phi %*% st$mu)) / s2 - md$prec * st$mu  # d ELBO / d mu
  e0 <- est(0)
  e1 <- est(300)
  v0 <- sum(e0$gradient_se[1:m]^2)
  v1 <- sum(e1$gradient_se[1:m]^2)
  expect_gt(v0 / v1, 4)  # (8.5 with 20000 draws; the paper reports about 10 at 300 support rows)
  expect_true(all(abs(e1$gradient[1:m] - g_mu) < 4.5 * e1$gradient_se[1:m] + 1e-8 * max(abs(g_mu))))
  expect_true(all(abs(e0$gradient[1:m] - g_mu) < 4.5 * e0$gradient_se[1:m] + 1e-8 * max(abs(g_mu))))
  # the fit (default: 500 support rows, here all 400) tracked a = Phi0_P mu
  # through its 1000 sparse updates (the paper's Proposition 3)
  expect_equal(fit$control_variate$rows, 400)
  expect_lt(fit$control_variate$drift, 1e-10 * max(1, abs(fitted(fit))))
  fb <- gpgam(I(y > 0) ~ gp(x1), data = d, family = binomial(), inference = "qsgp",
              control = qs_ctl(features = 64, iterations = 20))
  expect_null(fb$control_variate)  # (Gaussian only)
  expect_error(qsgp_options(control_variate = -1), "'control_variate'")
  expect_error(qsgp_options(control_variate = 2.5), "'control_variate'")
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
  expect_true(any(grepl("sigma comes out too large", out)))  # (a Gaussian fit: the mean field's noise bias)
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
  # (Gaussian, sigma estimated: F for the parametric term, whose Chi.sq is empty)
  expect_equal(a$F[a$term == "z"], unname(coef(fit)[["z"]]^2 / vcov(fit)["z", "z"]), tolerance = 1e-10)
  expect_true(all(is.finite(a$Chi.sq[a$term != "z"])) && all(a[["p-value"]] >= 0 & a[["p-value"]] <= 1))
  # comparing qsgp fits by their ELBOs: a warning says why the differences mislead
  expect_warning(anova(fit, fit), "inference = \"qsgp\": the ELBO .* do not compare models")
  expect_output(chk <- gp_check(fit, plot = FALSE), "Random features of the gp\\(\\) terms.*k-index")
  expect_equal(chk$terms$M, c(256L, 256L))
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

test_that("the pilot fit sets the starting hyperparameters: those of inference = \"vi\" on the pilot rows", {
  d <- qs_data(150)
  d$x2 <- runif(150)
  f <- y ~ gp(x1) + gp(x2) + z
  # hyperparameters held (freeze) through every iteration, so the fit keeps the start
  ctl <- qs_ctl(features = 64, feature_batch = 32, iterations = 20, freeze = 0.99)
  q <- gpgam(f, data = d, inference = "qsgp", control = ctl)
  v <- gpgam(f, data = d, control = qs_ctl(discrete = FALSE, learn_inducing = 50))
  for (i in 1:2) {
    expect_close(q$state$specs[[i]]$log_var, v$state$specs[[i]]$log_var, 1e-10)
    expect_close(q$state$specs[[i]]$log_ls, v$state$specs[[i]]$log_ls, 1e-10)
  }
  expect_close(sigma(q), sigma(v), 1e-10)
  expect_equal(q$pilot$rows, 150L)
  expect_equal(q$pilot$iterations, v$iterations)
  expect_output(print(summary(q)), "20 iterations \\(batch size 150, 1 thread\\) after a pilot fit of 150 rows")
  # a pilot of fewer rows than the data: the rows drawn with the seed
  q2 <- gpgam(f, data = d, inference = "qsgp", control = qs_ctl(features = 64, feature_batch = 32, iterations = 20,
                                                                freeze = 0.99, pilot = 100))
  expect_equal(q2$pilot$rows, 100L)
  expect_false(isTRUE(all.equal(sigma(q2), sigma(q))))
  # pilot = 0: the package's starting values (log variance log(1 / terms), log lengthscale 0)
  q0 <- gpgam(f, data = d, inference = "qsgp", control = qs_ctl(features = 64, feature_batch = 32, iterations = 20,
                                                                freeze = 0.99, pilot = 0))
  expect_null(q0$pilot)
  expect_close(q0$state$specs[[1]]$log_var, log(1 / 2), 1e-12)
  expect_close(q0$state$specs[[1]]$log_ls, 0, 1e-12)
  # given values are kept: a fixed kernel, a given sigma
  qf <- gpgam(f, data = d, inference = "qsgp", control = qs_ctl(features = 64, feature_batch = 32, iterations = 20,
                                                                fixed = c("kernel", "sigma"), sigma = 0.5))
  expect_close(qf$state$specs[[1]]$log_ls, 0, 1e-12)
  expect_close(sigma(qf), 0.5, 1e-3)
  expect_null(qf$pilot)  # (nothing to take from a pilot: none fitted)
  expect_error(qsgp_options(pilot = 10), "'pilot'")
  expect_error(qsgp_options(pilot = -1), "'pilot'")
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
  expect_error(gpgam(y ~ gp(x1), data = d, family = Gamma(), inference = "qsgp", control = qs_ctl()), "'family'")
  d$b <- as.integer(d$y > 0)
  expect_error(gpgam(b ~ gp(x1), data = d, family = binomial(link = "cloglog"), inference = "qsgp",
                     control = qs_ctl()), "'family'")
  d$g <- factor(sample(letters[1:3], 100, TRUE))
  expect_error(gpgam(y ~ gp(x1, by = g) + g, data = d, inference = "qsgp", control = qs_ctl()), "'formula'.*'by'")
  expect_error(gpgam(y ~ gp(g), data = d, inference = "qsgp", control = qs_ctl()), "'formula'.*random effect")
  expect_error(gpgam(y ~ gp(x1), data = d, inference = "vi", control = qs_ctl(features = 64)), "'features'")
  # inducing points asked of an engine that has none: a warning, not silence
  expect_warning(gpgam(y ~ gp(x1, k = 10), data = d, inference = "qsgp", control = qs_ctl(iterations = 5)),
                 "no inducing points \\(its basis: random features\\)")
  expect_warning(gpgam(y ~ gp(x1), data = d, inference = "qsgp", control = qs_ctl(iterations = 5, inducing = 10)),
                 "no inducing points")
})

# ---- binomial and Poisson: the tangent-line bound ----

# E_q log p(y | w) - KL(q || p) for a binomial (logit, probit; y a
# proportion of w trials) or Poisson likelihood with latent off + Phi w:
# expected log-likelihoods by integrate() (binomial) or in closed form
# (Poisson).
qs_elbo_glm <- function(Phi, y, w, off, prec, mu, rho, lik) {
  c2 <- exp(2 * rho)
  a <- off + drop(Phi %*% mu)
  s <- sqrt(drop(Phi^2 %*% c2))
  ell <- if (lik == "poisson") {
    w * (y * a - exp(a + s^2 / 2) - lgamma(y + 1))
  } else {
    lp <- if (lik == "logit") function(f) stats::plogis(f, log.p = TRUE) else function(f) stats::pnorm(f, log.p = TRUE)
    vapply(seq_along(y), function(l) {
      h <- function(z) stats::dnorm(z) * (y[l] * lp(a[l] + s[l] * z) + (1 - y[l]) * lp(-a[l] - s[l] * z))
      w[l] * stats::integrate(h, -12, 12, rel.tol = 1e-12, subdivisions = 500L)$value
    }, 0)
  }
  sum(ell) - 0.5 * sum(prec * (mu^2 + c2) - 2 * rho - log(prec) - 1)
}

qs_glm_data <- function(n, seed = 42) {
  set.seed(seed)
  x <- runif(n, -2, 2)
  d <- data.frame(x = x, z = rnorm(n))
  d$b <- rbinom(n, 1, plogis(qs_f_bin(x)))
  d$bp <- rbinom(n, 1, pnorm(qs_f_bin(x)))
  d$k <- rpois(n, exp(qs_f_pois(x)))
  d
}
qs_f_bin <- function(x) 1.5 * sin(2 * x) + 0.5 * x - 0.2
qs_f_pois <- function(x) 0.5 + 0.8 * sin(2 * x)

test_that("binomial and Poisson: the estimator with all rows and features is the exact ELBO; sampled, a lower bound", {
  d <- qs_glm_data(60, seed = 3)
  d$k[1:3] <- c(0, 7, 2)
  for (case in list(list(fam = binomial(), y = "b", lik = "logit"),
                    list(fam = binomial(link = "probit"), y = "bp", lik = "probit"),
                    list(fam = poisson(), y = "k", lik = "poisson"))) {
    fit <- gpgam(as.formula(paste(case$y, "~ gp(x) + z")), data = d, family = case$fam, inference = "qsgp",
                 control = qs_ctl(features = 16, feature_batch = 16, iterations = 50, batch_size = 60))
    st <- fit$state
    md <- qs_model(fit)
    m <- length(st$mu)
    set.seed(5)  # a posterior away from the fit's (parametric weights: on the scale of their features, x 100)
    sc <- ifelse(seq_len(m) %in% scalegp:::qsgp_blocks(st)[[2]], 0.01, 1)
    mu <- st$mu + rnorm(m, sd = 0.3) * sc
    rho <- st$rho + runif(m, -0.5, 0.3) + log(sc)
    y <- as.numeric(d[[case$y]])
    off <- rep(fit$scaling$y$center, 60)  # (Poisson: log(mean(y)); binomial: 0)
    exact <- qs_elbo_glm(md$Phi, y, rep(1, 60), off, md$prec, mu, rho, case$lik)
    specs <- scalegp:::qsgp_core_specs(st)
    full <- scalegp:::.qsgp_estimate(md$X, y, rep(1, 60), off, specs, st$log_noise, mu, rho, 60, 16, 1, 1, case$lik)
    expect_close(full$value, exact, 1e-9 * abs(exact))
    expect_close(full$exact, exact, 1e-9 * abs(exact))
    # 8 rows and 4 of 16 features per draw: below the ELBO on average, but not far
    est <- scalegp:::.qsgp_estimate(md$X, y, rep(1, 60), off, specs, st$log_noise, mu, rho, 8, 4, 20000, 5, case$lik)
    expect_lt(est$value, exact + 3 * est$value_se)
    expect_lt(est$value_se, 0.02 * abs(exact))
    expect_gt(est$value, exact - 0.2 * abs(exact))
  }
})

test_that("binomial (logit, probit) and Poisson qsgp fits recover the latent curve, as inference = \"vi\" does", {
  # Thresholds: with these settings (128 features, 64 sampled, 1000
  # iterations of 500 rows) the latent RMSE over the grid was 0.078 for
  # logit (vi 0.125), 0.119 for probit (vi 0.110) and 0.138 for Poisson (vi
  # 0.035), where the truth's sd over the grid is 1.33 (binomial) and 0.53
  # (Poisson).  The mean-field posterior over-states the latent variance,
  # and its ELBO then shrinks the kernel variance (to a tenth of vi's or
  # less; bench/qsgp_families.R), so the Poisson curve is flattened.  The test asks for at
  # most 2 (binomial) or 5 (Poisson) times vi's RMSE and 0.15 (binomial) or
  # 0.3 (Poisson) of the truth's sd; a wrong link (logit for probit scales
  # the curve by 1.6: RMSE ~0.6 sd), a missing offset or a wrong sign does
  # not meet them.
  d <- qs_glm_data(2000)
  grid <- data.frame(x = seq(-1.9, 1.9, length.out = 200), z = 0)
  ctl <- qs_ctl(features = 128, feature_batch = 64, iterations = 1000)
  for (case in list(list(fam = binomial(), y = "b", f = qs_f_bin), list(fam = binomial(link = "probit"), y = "bp", f = qs_f_bin),
                    list(fam = poisson(), y = "k", f = qs_f_pois))) {
    # (the SE kernel, the paper's and the one the thresholds were measured with)
    form <- as.formula(paste(case$y, "~ gp(x, kernel = \"se\")"))
    fq <- gpgam(form, data = d, family = case$fam, inference = "qsgp", control = ctl)
    fv <- gpgam(form, data = d, family = case$fam, inference = "vi", control = qs_ctl())
    truth <- case$f(grid$x)
    rmse <- function(fit) sqrt(mean((predict(fit, grid) - truth)^2))
    pois <- case$fam$family == "poisson"
    expect_lt(rmse(fq), (if (pois) 5 else 2) * rmse(fv))
    expect_lt(rmse(fq), (if (pois) 0.3 else 0.15) * sd(truth))
    # fitted values: the posterior mean of the mean response, through the inverse link
    mu <- fitted(fq)
    if (case$fam$family == "binomial") expect_true(all(mu > 0 & mu < 1)) else expect_true(all(mu > 0))
    expect_close(mean(mu), mean(d[[case$y]]), 0.1 * mean(d[[case$y]]))
    p <- predict(fq, d[1:5, ], se.fit = TRUE)
    r <- predict(fq, d[1:5, ], type = "response", se.fit = TRUE)
    expect_close(r$fit, mu[1:5], 1e-8)
    expect_close(p$fit, fq$linear.predictors[1:5], 1e-8)
    mean_resp <- switch(case$fam$link,
      logit = vapply(1:5, function(i) stats::integrate(function(f) stats::plogis(f) * stats::dnorm(f, p$fit[i], p$se.fit[i]),
                                                       -Inf, Inf, rel.tol = 1e-10)$value, 0),
      probit = stats::pnorm(p$fit / sqrt(1 + p$se.fit^2)),
      log = exp(p$fit + p$se.fit^2 / 2))
    expect_close(r$fit, mean_resp, 1e-6 * max(mean_resp))
    expect_true(all(r$se.fit > 0 & is.finite(r$se.fit)))
    expect_true(is.na(fq$params$sigma))
    expect_false(any(grepl("noise", names(fq$gradient))))
  }
})

test_that("with exact gradients, a qsgp fit reaches the parametric block's stationary point (Poisson and logit)", {
  # All rows and features: the estimator's gradient is exact, so the
  # parametric coefficients' score X'(y - E mu) (the ELBO's gradient in them,
  # less a prior term of beta / 100^2) must vanish at the end.  Measured
  # after 300 iterations: |z| <= 0.026 (Poisson, intercept 2) and 0.007
  # (logit).  When the parametric means stepped in units of their whitened
  # weights (x 100), the Poisson fit's |z| here was 1.2e6 (rates near 0).
  d <- qs_glm_data(300)
  set.seed(1)
  d$k2 <- rpois(300, exp(2 + 0.8 * sin(2 * d$x) + 0.5 * d$z))
  X <- cbind(1, d$z)
  for (case in list(list(fam = poisson(), y = "k2"), list(fam = binomial(), y = "b"))) {
    fit <- gpgam(as.formula(paste(case$y, "~ gp(x) + z")), data = d, family = case$fam, inference = "qsgp",
                 control = qs_ctl(features = 32, feature_batch = 32, iterations = 300, batch_size = 300))
    mu <- fitted(fit)
    y <- d[[case$y]]
    z <- colSums(X * (y - mu)) / sqrt(colSums(X^2 * case$fam$variance(mu)))
    expect_true(all(abs(z) < 0.1), info = paste(case$y, paste(signif(z, 3), collapse = " ")))
  }
})

test_that("a non-Gaussian qsgp fit's logLik is the exact ELBO at its posterior, labelled as a bound", {
  d <- qs_glm_data(300, seed = 8)
  for (case in list(list(fam = poisson(), y = "k", lik = "poisson"), list(fam = binomial(), y = "b", lik = "logit"))) {
    fit <- gpgam(as.formula(paste(case$y, "~ gp(x) + z")), data = d, family = case$fam, inference = "qsgp",
                 control = qs_ctl(features = 64, feature_batch = 16, iterations = 300, batch_size = 100))
    st <- fit$state
    md <- qs_model(fit)
    elbo <- qs_elbo_glm(md$Phi, d[[case$y]], rep(1, 300), rep(fit$scaling$y$center, 300), md$prec, st$mu, st$rho,
                        case$lik)
    expect_close(as.numeric(logLik(fit)), elbo, 1e-8 * abs(elbo))
    out <- capture.output(print(summary(fit)))
    expect_true(any(grepl("ELBO = .*lower bound", out)))
    expect_true(any(grepl("tangent-line lower bound", out)))
  }
})

# ---- the chevron covariance (Challis and Barber 2013; the paper's QSGP-kappa) ----

# The full Cholesky factor C (m x m) of a chevron posterior, written from
# its definition: diagonal exp(rho); per gp() block with nf frequencies the
# dense column at chevron position r (feature r / 2, a cosine, or nf + r / 2,
# a sine; 0-based) holds dense[[i]][, r + 1] at the features further along
# that order.
qs_chol <- function(st, rho, dense) {
  C <- diag(exp(rho), length(rho))
  bl <- scalegp:::qsgp_blocks(st)
  for (i in seq_along(bl)) {
    H <- dense[[i]]
    if (is.null(H) || ncol(H) == 0) next
    nf <- nrow(H) / 2
    pos <- 2 * ((seq_len(nrow(H)) - 1) %% nf) + (seq_len(nrow(H)) > nf)
    for (r in seq_len(ncol(H)) - 1) {
      below <- which(pos > r)
      C[bl[[i]][below], bl[[i]][pos == r]] <- H[below, r + 1]
    }
  }
  C
}

# Eq. 1-2 with a general C: E_q log p(y | w) - KL(q || p).
qs_elbo_chol <- function(Phi, y, prec, mu, C, log_noise) {
  s2 <- 1e-6 + exp(log_noise)
  a <- drop(Phi %*% mu)
  v <- rowSums((Phi %*% C)^2)
  sum(-0.5 * log(2 * pi * s2) - ((y - a)^2 + v) / (2 * s2)) -
    0.5 * (sum(prec * (mu^2 + rowSums(C^2))) - 2 * sum(log(diag(C))) - sum(log(prec)) - length(mu))
}

test_that("chevron: the ELBO estimator averages to the closed-form ELBO, and its gradient to the exact gradient", {
  d <- qs_data(60)
  fit <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
               control = qs_ctl(features = 16, feature_batch = 16, iterations = 50, batch_size = 60,
                                covariance = "chevron", dense_columns = 5))
  st <- fit$state
  expect_equal(dim(st$dense[[1]]), c(16L, 5L))
  expect_equal(ncol(st$dense[[2]]), 0L)  # (the parametric block stays mean field)
  md <- qs_model(fit)
  m <- length(st$mu)
  set.seed(3)  # a posterior away from the fit's, with dense columns
  mu <- st$mu + rnorm(m, sd = 0.3)
  rho <- st$rho + runif(m, -0.5, 0.3)
  dense <- st$dense
  dense[[1]][] <- rnorm(80, sd = 0.3)
  nf <- 8
  pos <- 2 * ((1:16 - 1) %% nf) + (1:16 > nf)
  live <- outer(pos, 0:4, ">")  # entries below the diagonal; the others are structural zeros
  dense[[1]][!live] <- 0
  exact <- qs_elbo_chol(md$Phi, md$y, md$prec, mu, qs_chol(st, rho, dense), st$log_noise)
  specs <- scalegp:::qsgp_core_specs(st)
  specs[[1]]$learn_kernel <- TRUE
  full <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 60, 16, 1, 1,
                                   dense = dense)
  expect_close(full$value, exact, 1e-9 * abs(exact))
  expect_close(full$exact, exact, 1e-9 * abs(exact))
  # central differences in mu, rho, log variance, log lengthscale, log noise, then the live entries of L
  f <- function(x) {
    sp <- st$specs
    sp[[1]]$log_var <- x[2 * m + 1]
    sp[[1]]$log_ls <- x[2 * m + 2]
    f2 <- fit
    f2$state$specs <- sp
    m2 <- qs_model(f2)
    dn <- dense
    dn[[1]][live] <- x[2 * m + 3 + seq_len(sum(live))]
    qs_elbo_chol(m2$Phi, md$y, m2$prec, x[1:m], qs_chol(st, x[m + 1:m], dn), x[2 * m + 3])
  }
  x0 <- c(mu, rho, st$specs[[1]]$log_var, st$specs[[1]]$log_ls, st$log_noise, dense[[1]][live])
  fd <- qs_central_diff(f, x0)
  g_full <- c(full$gradient, full$gradient_dense[live])
  expect_true(all(abs(g_full - fd) < 1e-5 * pmax(abs(fd), 1)))
  expect_identical(full$gradient_dense[!live], rep(0, sum(!live)))
  expect_gt(min(abs(fd[2 * m + 3 + seq_len(sum(live))])), 1e-3)  # (every live entry has a gradient to test)
  # sampled rows and features (4 of 16): unbiased, within Monte Carlo error
  est <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 8, 4, 40000, 5,
                                  dense = dense)
  expect_lt(abs(est$value - exact), 4 * est$value_se)
  expect_lt(est$value_se, 0.02 * abs(exact))
  g_est <- c(est$gradient, est$gradient_dense[live])
  se <- c(est$gradient_se, est$gradient_dense_se[live])
  expect_true(all(abs(g_est - fd) < 4 * se + 1e-5 * pmax(abs(fd), 1)))
  expect_gt(min(est$gradient_dense_se[live]), 0)  # (the dense entries were sampled)
  # with the control variate on 30 support rows (on the mean and on each
  # dense column): exact with all rows and features, unbiased when sampled
  full_cv <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 60, 16, 1, 1,
                                      control_rows = 30, dense = dense)
  expect_close(full_cv$value, exact, 1e-9 * abs(exact))
  expect_true(all(abs(c(full_cv$gradient, full_cv$gradient_dense[live]) - fd) < 1e-5 * pmax(abs(fd), 1)))
  cv <- scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 60), rep(0, 60), specs, st$log_noise, mu, rho, 8, 4, 40000, 5,
                                 control_rows = 30, dense = dense)
  expect_lt(abs(cv$value - exact), 4 * cv$value_se)
  g_cv <- c(cv$gradient, cv$gradient_dense[live])
  se_cv <- c(cv$gradient_se, cv$gradient_dense_se[live])
  expect_true(all(abs(g_cv - fd) < 4 * se_cv + 1e-5 * pmax(abs(fd), 1)))
})

test_that("chevron: the control variate on each dense column cuts its gradient's variance, and fit() tracks it", {
  # the paper's QSGP-100 (Evans and Nair 2018, App. I.1) has a control
  # variate for the mean and one per dense column; near the posterior of a
  # fit, 256 features of which 16 sampled, 50 of 400 rows per draw
  d <- qs_data(400)
  fit <- gpgam(y ~ gp(x1), data = d, inference = "qsgp",
               control = qs_ctl(features = 256, feature_batch = 16, iterations = 1000, batch_size = 50,
                                covariance = "chevron", dense_columns = 10))
  st <- fit$state
  md <- qs_model(fit)
  specs <- scalegp:::qsgp_core_specs(st)
  est <- function(cv)
    scalegp:::.qsgp_estimate(md$X, md$y, rep(1, 400), rep(0, 400), specs, st$log_noise, st$mu, st$rho, 50, 16, 5000,
                             5, control_rows = cv, dense = st$dense)
  nf <- 128
  pos <- 2 * ((1:256 - 1) %% nf) + (1:256 > nf)
  live <- outer(pos, 0:9, ">")
  e0 <- est(0)
  e1 <- est(300)
  v0 <- sum(e0$gradient_dense_se[live]^2)
  v1 <- sum(e1$gradient_dense_se[live]^2)
  expect_gt(v0 / v1, 10)  # (33 with 20000 draws; the means' gradient: 8.0, the log sds': 8.6)
  # the two estimators agree on the mean gradient of the dense entries
  z <- (e1$gradient_dense[live] - e0$gradient_dense[live]) /
    sqrt(e1$gradient_dense_se[live]^2 + e0$gradient_dense_se[live]^2)
  expect_lt(max(abs(z)), 4.5)
  # fit() tracked a = Phi0_P mu and beta = Phi0_P C's dense columns through its sparse updates
  expect_equal(fit$control_variate$rows, 400)
  expect_lt(fit$control_variate$drift, 1e-10 * max(1, abs(fitted(fit))))
})

test_that("chevron with every column dense and all rows and features converges to the exact posterior", {
  # C then is a full Cholesky factor: the ELBO's optimum is the Bayesian
  # linear model's posterior N(A^-1 Phi'y / s2, A^-1), A = Phi'Phi / s2 + S,
  # and the ELBO there is the log evidence log N(y | 0, Phi S^-1 Phi' + s2 I)
  d <- qs_data(120)
  fit <- gpgam(y ~ gp(x1) - 1, data = d, inference = "qsgp",
               control = qs_ctl(features = 12, feature_batch = 12, batch_size = 120, iterations = 20000,
                                final_rate = 1, variational_rate = 0.5, fixed = c("kernel", "sigma"), sigma = 0.3,
                                covariance = "chevron", dense_columns = 12))
  st <- fit$state
  md <- qs_model(fit)
  s2 <- 1e-6 + exp(st$log_noise)
  A <- crossprod(md$Phi) / s2 + diag(md$prec)
  Sigma <- solve(A)
  mu <- drop(Sigma %*% crossprod(md$Phi, md$y) / s2)
  C <- qs_chol(st, st$rho, st$dense)
  expect_close(st$mu, mu, 1e-5 * max(abs(mu)))
  expect_close(tcrossprod(C), Sigma, 1e-5 * max(abs(Sigma)))
  K <- md$Phi %*% (t(md$Phi) / md$prec) + diag(s2, 120)
  evidence <- -0.5 * (determinant(K)$modulus + sum(md$y * solve(K, md$y)) + 120 * log(2 * pi))
  expect_close(as.numeric(logLik(fit)) + 120 * log(fit$scaling$y$scale), evidence, 1e-6 * abs(evidence))
  # latent sd at new rows: sqrt(phi' Sigma phi)
  p <- predict(fit, d[1:10, ], se.fit = TRUE)
  expect_close(p$se.fit, fit$scaling$y$scale * sqrt(rowSums((md$Phi[1:10, ] %*% C)^2)), 1e-8)
})

test_that("a qsgp term's edf is the exact GP's tr(K (K + W^-1)^-1) at its kernel, not the mean field's", {
  # Gaussian, 200 rows (Nystrom on the 200 distinct values: exact); the
  # mean field's tr(I - S Sigma) counts nearly every random feature
  d <- qs_data(200)
  fit <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp", control = qs_ctl(features = 256, iterations = 300))
  st <- fit$state
  md <- qs_model(fit)
  s <- st$specs[[1]]
  K <- qs_gram_kernel(s, md$X[, s$cols + 1L, drop = FALSE], md$X[, s$cols + 1L, drop = FALSE])
  s2 <- 1e-6 + exp(st$log_noise)
  edf <- eval(quote(component_edf(fit)), list(fit = fit), asNamespace("scalegp"))
  expect_close(edf[1], sum(diag(K %*% solve(K + diag(s2, 200)))), 1e-5)
  expect_equal(fit$params$gp[[1]]$edf, edf[1])
  mf <- sum(1 - st$c2[1:256] * exp(-s$log_var))
  expect_gt(mf, 5 * edf[1])  # (the mean field's count)
  # binomial: the glm working weights mu (1 - mu) at the fitted predictor (its posterior mean)
  d$yb <- as.integer(d$y > 0)
  fb <- gpgam(yb ~ gp(x1), data = d, family = binomial(), inference = "qsgp",
              control = qs_ctl(features = 256, iterations = 300))
  sb <- fb$state$specs[[1]]
  Xb <- scalegp:::new_design(fb, NULL, stats::na.pass, mf = fb$model)$X[, sb$cols + 1L, drop = FALSE]
  Kb <- qs_gram_kernel(sb, Xb, Xb)
  mu <- plogis(fb$linear.predictors)
  Wb <- mu * (1 - mu)
  eb <- eval(quote(component_edf(fit)), list(fit = fb), asNamespace("scalegp"))
  expect_close(eb[1], sum(diag(Kb %*% solve(Kb + diag(1 / Wb)))), 1e-5)
})

test_that("chevron: predictions, term covariances and posterior draws use the dense columns", {
  d <- qs_data(300)
  fit <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
               control = qs_ctl(features = 64, feature_batch = 16, iterations = 400, batch_size = 50,
                                covariance = "chevron", dense_columns = 10))
  expect_match(capture.output(print(fit))[2], "chevron \\(10 dense columns\\) posterior")
  st <- fit$state
  expect_gt(max(abs(st$dense[[1]])), 1e-3)  # (the dense columns moved)
  md <- qs_model(fit)
  C <- qs_chol(st, st$rho, st$dense)
  ysc <- fit$scaling$y
  p <- predict(fit, d[1:20, ], se.fit = TRUE)
  expect_close(p$se.fit, ysc$scale * sqrt(rowSums((md$Phi[1:20, ] %*% C)^2)), 1e-9)
  expect_close(fitted(fit), ysc$center + ysc$scale * drop(md$Phi %*% st$mu), 1e-9)
  elbo <- qs_elbo_chol(md$Phi, md$y, md$prec, st$mu, C, st$log_noise)
  expect_close(as.numeric(logLik(fit)) + 300 * log(ysc$scale), elbo, 1e-8 * abs(elbo))
  # the intercept's sd (it carries the terms' means over the data, centre' mu): from L Sigma L'
  ctr <- fit$state$center
  expect_gt(max(abs(ctr)), 0)
  Lrow <- ysc$scale * ctr
  Lrow[length(Lrow) - 1] <- Lrow[length(Lrow) - 1] + fit$terms$param_scaling$A[1, 1] * ysc$scale *
    st$specs[[2]]$prior_sd[1]
  Lrow[length(Lrow)] <- Lrow[length(Lrow)] + fit$terms$param_scaling$A[1, 2] * ysc$scale * st$specs[[2]]$prior_sd[2]
  expect_close(sqrt(vcov(fit)[1, 1]), sqrt(sum((Lrow %*% C)^2)), 1e-9)
  # the term's covariance at rows (centred features) against predict's term se
  X <- md$X[1:30, ]
  tp <- eval(quote(term_projection(fit, X)), list(fit = fit, X = X), asNamespace("scalegp"))[[1]]
  tt <- predict(fit, d[1:30, ], type = "terms", se.fit = TRUE)
  expect_close(sqrt(diag(tp$cov)) * ysc$scale, tt$se.fit[, "gp(x1)"], 1e-9)
  # posterior draws: their variance at a row is the latent variance (Monte Carlo, 20000 draws: 1% sd)
  set.seed(5)
  eta <- eval(quote(latent_draws(fit, X[1:5, ], 20000)), list(fit = fit, X = X), asNamespace("scalegp"))
  expect_true(all(abs(apply(eta, 1, var) / (p$se.fit[1:5] / ysc$scale)^2 - 1) < 0.05))
  # reproducible for any number of threads
  f2 <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
              control = gp_control(verbose = FALSE, threads = 2, seed = 7, features = 64, feature_batch = 16,
                                   iterations = 400, batch_size = 50, covariance = "chevron", dense_columns = 10))
  expect_identical(f2$state$dense, st$dense)
  expect_identical(f2$state$mu, st$mu)
})

test_that("chevron, binomial: the estimator with all rows and features is the exact ELBO; sampled, a lower bound", {
  d <- qs_glm_data(60, seed = 3)
  fit <- gpgam(b ~ gp(x), data = d, family = binomial(), inference = "qsgp",
               control = qs_ctl(features = 16, feature_batch = 16, iterations = 50, batch_size = 60, dense_columns = 4))
  st <- fit$state
  expect_equal(fit$control$options$covariance, "chevron")  # (dense_columns alone selects it)
  md <- qs_model(fit)
  m <- length(st$mu)
  set.seed(4)
  dense <- st$dense
  dense[[1]][] <- rnorm(64, sd = 0.2)
  specs <- scalegp:::qsgp_core_specs(st)
  full <- scalegp:::.qsgp_estimate(md$X, fit$y, rep(1, 60), rep(0, 60), specs, st$log_noise, st$mu, st$rho, 60, 16,
                                   1, 1, "logit", dense = dense)
  expect_close(full$value, full$exact, 1e-9 * abs(full$exact))
  est <- scalegp:::.qsgp_estimate(md$X, fit$y, rep(1, 60), rep(0, 60), specs, st$log_noise, st$mu, st$rho, 8, 4,
                                  20000, 5, "logit", dense = dense)
  expect_lt(est$value, full$exact + 3 * est$value_se)
})

test_that("bad chevron input gives errors naming the argument", {
  expect_error(qsgp_options(features = 64, covariance = "chevron", dense_columns = 65), "'dense_columns'.*at most")
  expect_error(qsgp_options(covariance = "meanfield", dense_columns = 5), "'dense_columns'.*chevron")
  expect_error(qsgp_options(dense_columns = -1), "'dense_columns'")
  expect_error(qsgp_options(dense_columns = 2.5), "'dense_columns'")
  expect_error(qsgp_options(covariance = "chevron", dense_columns = 0), "'dense_columns'.*at least 1")
  expect_error(qsgp_options(covariance = "full"), "'covariance'")
  expect_error(qsgp_options(features = 1e7, dense_columns = 100), "'dense_columns'.*2.5e8")
  expect_equal(qsgp_options(covariance = "chevron")$dense_columns, 20L)
  expect_equal(qsgp_options(features = 8, covariance = "chevron")$dense_columns, 8L)
  expect_equal(qsgp_options()$dense_columns, 0L)
})

# ---- basis = "inducing": inducing points at every training row (the paper's m = n variant)

# The data and specs of a small problem at the glue level: one SE gp() term
# over two inputs and an intercept, weights and an offset.
qs_gram_problem <- function(n = 40, seed = 3) {
  set.seed(seed)
  X <- cbind(1, runif(n), runif(n))
  list(X = X, y = sin(4 * X[, 2]) + X[, 3] + rnorm(n, sd = 0.3), w = replace(rep(1, n), 5, 2), off = rep(0.1, n),
       ln = log(0.09), specs = list(list(kind = "stationary", cols = 1:2, kernel = "se", log_var = log(0.8),
                                         log_ls = log(c(0.4, 0.7))),
                                    list(kind = "linear", cols = 0L, prior_sd = 1.5)))
}

# The ELBO of the model f = K w + P beta, w ~ N(0, K^-1), beta ~ N(0, I),
# mean field, without its term log|K| / 2 (written from the paper's eq. 1-2).
qs_gram_elbo <- function(pr, mu, rho) {
  n <- nrow(pr$X)
  s2 <- 1e-6 + exp(pr$ln)
  c2 <- exp(2 * rho)
  K <- qs_gram_kernel(pr$specs[[1]], pr$X[, 2:3], pr$X[, 2:3])
  P <- pr$X[, 1] * 1.5
  a <- drop(K %*% mu[1:n]) + P * mu[n + 1]
  v <- drop(K^2 %*% c2[1:n]) + P^2 * c2[n + 1]
  sum(-0.5 * log(2 * pi * s2 / pr$w) - 0.5 * pr$w * ((pr$y - pr$off - a)^2 + v) / s2) -
    0.5 * (exp(pr$specs[[1]]$log_var) * sum(c2[1:n]) + sum(mu[1:n] * (K %*% mu[1:n])) - sum(2 * rho[1:n] + 1)) -
    0.5 * (mu[n + 1]^2 + c2[n + 1] - 2 * rho[n + 1] - 1)
}

test_that("basis = \"inducing\": the estimator averages to the closed-form ELBO and its gradient to the exact one", {
  pr <- qs_gram_problem()
  n <- nrow(pr$X)
  set.seed(4)
  mu <- c(rnorm(n, sd = 0.3), 0.2)
  rho <- c(rnorm(n, -1, 0.2), -0.5)
  est <- function(rows, fb, reps, seed, cv = 0)
    scalegp:::.qsgp_gram_estimate(pr$X, pr$y, pr$w, pr$off, pr$specs, pr$ln, mu, rho, rows, fb, reps, seed, cv)
  exact <- qs_gram_elbo(pr, mu, rho)
  g <- qs_central_diff(function(th) qs_gram_elbo(pr, th[1:(n + 1)], th[-(1:(n + 1))]), c(mu, rho), 1e-5)
  # all rows and weights: the estimator is the ELBO (the control variate then vanishes)
  full <- est(n, n, 1, 1)
  expect_close(full$value, exact, 1e-10 * abs(exact))
  expect_close(full$exact, exact, 1e-10 * abs(exact))
  expect_close(full$gradient, g, 1e-6 * max(abs(g)))
  expect_close(est(n, n, 1, 1, cv = 10)$gradient, g, 1e-6 * max(abs(g)))
  # sampled (8 of 40 rows, 6 of 40 weights twice): unbiased, with and without the control variate
  plain <- est(8, 6, 40000, 2)
  cv <- est(8, 6, 40000, 2, cv = 10)
  for (s in list(plain, cv)) {
    expect_lt(abs(s$value - exact), 4.5 * s$value_se)
    expect_true(all(abs(s$gradient - g) < 4.5 * s$gradient_se + 1e-9))
  }
  # the control variate (Prop. 3 for the data term, the Nystrom one of App. F.2 for mu' K mu) cuts the noise of
  # the means' gradient (measured here: mean se 8.2 -> 4.9; at two other random mu 8.8 -> 3.0, 8.7 -> 2.9)
  expect_lt(mean(cv$gradient_se[1:n]), 0.7 * mean(plain$gradient_se[1:n]))
})

test_that("basis = \"inducing\" with all rows and weights converges to the exact GP posterior mean", {
  # (inputs on a grid at twice the lengthscale: K is well conditioned, so that the deterministic AdaGrad
  # steps converge in a few thousand iterations; with K ill conditioned they take far more)
  set.seed(1)
  d <- data.frame(x1 = seq(-2, 2, length.out = 40))
  d$y <- sin(2 * d$x1) + rnorm(40, sd = 0.3)
  fit <- gpgam(y ~ gp(x1, kernel = "se", variance = 0.8, lengthscale = 0.05), data = d, inference = "qsgp",
               control = qs_ctl(basis = "inducing", feature_batch = 40, batch_size = 40, iterations = 20000,
                                final_rate = 1, variational_rate = 0.5, sigma = 0.3, fixed = "sigma"))
  st <- fit$state
  expect_true(scalegp:::qsgp_gram(st))
  s <- st$specs[[1]]
  n <- 40
  X1 <- st$X_train[, s$cols + 1L, drop = FALSE]
  K <- qs_gram_kernel(s, X1, X1)
  P <- st$X_train[, st$specs[[2]]$cols + 1L, drop = FALSE] %*% diag(st$specs[[2]]$prior_sd, 1)
  ysc <- fit$scaling$y
  r <- (d$y - ysc$center) / ysc$scale
  s2 <- 1e-6 + exp(st$log_noise)
  # the mean-field optimum: the posterior mean (that of the exact GP with prior covariance K + P P') and
  # c_i^2 = 1 / A_ii, A = Phi' Phi / s2 + S, Phi = [K, P], S = blockdiag(K, I)
  Kp <- K + tcrossprod(P)
  fstar <- drop(Kp %*% solve(Kp + diag(s2, n), r))
  Phi <- cbind(K, P)
  A <- crossprod(Phi) / s2 + rbind(cbind(K, 0), c(rep(0, n), 1))
  expect_close(fitted(fit), ysc$center + ysc$scale * fstar, 2e-6)
  expect_close(st$c2, 1 / diag(A), 1e-4 * max(1 / diag(A)))
  # the ELBO at the posterior (without log|K| / 2); logLik() is NA
  mu <- st$mu
  elbo <- sum(-0.5 * log(2 * pi * s2) - ((r - drop(Phi %*% mu))^2 + drop(Phi^2 %*% st$c2)) / (2 * s2)) -
    0.5 * (exp(s$log_var) * sum(st$c2[1:n]) + sum(mu[1:n] * (K %*% mu[1:n])) - sum(2 * st$rho[1:n] + 1)) -
    0.5 * (mu[n + 1]^2 + st$c2[n + 1] - 2 * st$rho[n + 1] - 1)
  expect_close(fit$elbo_without_logdet + n * log(ysc$scale), elbo, 1e-8 * abs(elbo))
  expect_true(is.na(logLik(fit)))
  # predictions at new rows: mean k' mu + p beta; variance sum k^2 c^2 + p^2 c_beta^2 plus the Proposition 4
  # term sf^4 s2 / (k' k + s2 sf^2) (sf^2 = k(x, x))
  nd <- data.frame(x1 = c(-2.5, 0.13, 3))
  p <- predict(fit, nd, se.fit = TRUE)
  Xn <- scalegp:::new_design(fit, nd, stats::na.pass)$X
  ks <- qs_gram_kernel(s, Xn[, s$cols + 1L, drop = FALSE], X1)
  pn <- Xn[, st$specs[[2]]$cols + 1L] * st$specs[[2]]$prior_sd
  sf2 <- exp(s$log_var)
  m <- drop(ks %*% mu[1:n]) + pn * mu[n + 1]
  v <- drop(ks^2 %*% st$c2[1:n]) + pn^2 * st$c2[n + 1] + sf2^2 * s2 / (rowSums(ks^2) + s2 * sf2)
  expect_close(p$fit, ysc$center + ysc$scale * m, 1e-10)
  expect_close(p$se.fit, ysc$scale * sqrt(v), 1e-10)
  # far from the data the latent variance returns to the prior's (plus the intercept's)
  far <- predict(fit, data.frame(x1 = 50), se.fit = TRUE)
  expect_close(far$se.fit^2 / ysc$scale^2, sf2 + pn[1]^2 * st$c2[n + 1], 1e-6)
  # centred terms sum to zero over the data; the edf is n - tr(K Sigma) for the term
  tt <- predict(fit, type = "terms")
  expect_lt(abs(sum(tt[, 1])), 1e-8)
  expect_close(rowSums(tt) + attr(tt, "constant"), fitted(fit), 1e-8)
  # the term's edf: the exact GP's tr(K (K + s2 I)^-1) (Nystrom on 300 rows: exact with n = 40)
  edf <- eval(quote(component_edf(fit)), list(fit = fit), asNamespace("scalegp"))
  expect_close(edf[1], sum(diag(K %*% solve(K + diag(s2, n)))), 1e-5)
})

test_that("basis = \"inducing\": sampled fits are reproducible for any thread count, and the methods run", {
  d <- qs_data(300)
  ctl <- function(threads) gp_control(basis = "inducing", feature_batch = 64, batch_size = 100, iterations = 300,
                                      control_variate = 50, threads = threads, seed = 7, verbose = FALSE)
  f1 <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp", control = ctl(1))
  f2 <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp", control = ctl(2))
  expect_identical(f1$state$mu, f2$state$mu)
  expect_identical(f1$state$rho, f2$state$rho)
  expect_lt(f1$control_variate$drift, 1e-8)
  expect_match(capture.output(print(f1))[2], "inducing points at all 300 rows")
  expect_output(print(f1), "300 inducing points \\(the training rows\\)")
  notes <- eval(quote(engine_notes(f1)), list(f1 = f1), asNamespace("scalegp"))
  expect_true(any(grepl("no empirical Bayes", notes)))
  p <- predict(f1, d[1:5, ], type = "terms", se.fit = TRUE)
  expect_identical(dim(p$fit), c(5L, 2L))
  expect_true(all(p$se.fit[, 1] > 0))
  sim <- simulate(f1, nsim = 2, seed = 1)
  expect_identical(dim(sim), c(300L, 2L))
  # the weights converge slowly (K is ill conditioned): the latent RMSE against the truth falls from 0.49
  # after 300 iterations to 0.41 after 2000 (measured; inference = "vi": 0.054)
  f3 <- gpgam(y ~ gp(x1) + z, data = d, inference = "qsgp",
              control = gp_control(basis = "inducing", feature_batch = 64, batch_size = 100, iterations = 2000,
                                   seed = 7, verbose = FALSE))
  rmse <- function(f) sqrt(mean((fitted(f) - (sin(2 * d$x1) + 0.3 * d$z))^2))
  expect_lt(rmse(f3), 0.45)
  expect_lt(rmse(f3), rmse(f1) - 0.05)
})

test_that("basis = \"inducing\": bad input gives errors naming the argument", {
  d <- qs_data(100)
  d$b <- as.numeric(d$y > 0)
  expect_error(gpgam(b ~ gp(x1), data = d, family = binomial(), inference = "qsgp",
                     control = qs_ctl(basis = "inducing")), "'family'")
  expect_error(gpgam(y ~ gp(x1) + gp(z), data = d, inference = "qsgp", control = qs_ctl(basis = "inducing")),
               "'formula'")
  expect_error(qsgp_options(basis = "inducing", covariance = "chevron"), "'covariance'")
  expect_error(qsgp_options(basis = "inducing", dense_columns = 4), "'covariance'")
  expect_error(qsgp_options(basis = "fouri"), "'basis'")
  expect_silent(qsgp_options(basis = "inducing", feature_batch = 3000))
  expect_warning(gpgam(y ~ gp(x1), data = d, inference = "qsgp",
                       control = qs_ctl(basis = "inducing", pilot = 0, iterations = 5)), "'pilot'")
  # gp_control() checks the options of an engine together (feature_batch against the features given with it)
  expect_identical(gp_control(features = 1e5, feature_batch = 1e4)$feature_batch, 10000L)
  expect_identical(gp_control(basis = "inducing", feature_batch = 3000)$feature_batch, 3000L)
  expect_error(gp_control(features = 100, feature_batch = 200), "'feature_batch'")
})
