# Additive models (seed 004): several gp() terms, centred ANOVA kernels,
# factor random effects, coupled and mean-field posteriors.

ctl_fixed <- function(..., iterations = 1) {
  gp_control(fixed = c("kernel", "inducing", "sigma"), iterations = iterations, verbose = FALSE, ...)
}

# Centred SE kernel of one input in plain R (the test oracle): nodes s with
# weights w, lengthscale l (same scale as x and z).
centred_se <- function(x, z, l, s, w) {
  g <- function(a, b) exp(-0.5 * outer(a, b, "-")^2 / l^2)
  mx <- g(x, s) %*% w
  mz <- g(z, s) %*% w
  g(x, z) - mx %*% t(mz) / drop(t(w) %*% g(s, s) %*% w)
}

test_that("with full rank and a Gaussian likelihood q(U) is the closed-form optimum (eq. 6)", {
  set.seed(10)
  n <- 150
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$y <- sin(5 * d$x1) + d$x2^2 + rnorm(n, sd = 0.2)
  Z1 <- seq(0.05, 0.95, length.out = 7)
  Z2 <- seq(0.1, 0.9, length.out = 5)
  fit <- gpgam(y ~ gp(x1, inducing = Z1, lengthscale = 0.3, variance = 0.8) +
                 gp(x2, inducing = Z2, lengthscale = 0.5, variance = 0.5) - 1,
               data = d, control = ctl_fixed(sigma = 0.25, jitter = 1e-8))
  # features in plain R: whitened Phi_c = K_fu,c L_c^{-T} on the standardised scale
  ysc <- fit$scaling$y$scale
  phi <- function(i, x, Z, l, v) {
    g <- fit$terms$gp[[i]]
    sp <- fit$state$specs[[i]]
    xs <- (x - g$scaling$center) / g$scaling$scale
    zs <- (Z - g$scaling$center) / g$scaling$scale
    ls <- l / g$scaling$scale
    vv <- v / ysc^2
    Kuu <- vv * centred_se(zs, zs, ls, sp$nodes[[1]], sp$weights[[1]])
    Kuu <- Kuu + diag(1e-8 * vv, length(zs))
    Kfu <- vv * centred_se(xs, zs, ls, sp$nodes[[1]], sp$weights[[1]])
    Kfu %*% solve(chol(Kuu))  # K_fu L^{-T}, with chol() the upper factor L^T
  }
  Phi <- cbind(phi(1, d$x1, Z1, 0.3, 0.8), phi(2, d$x2, Z2, 0.5, 0.5))
  s2 <- (0.25 / ysc)^2 - 0 # noise variance on the standardised scale
  yy <- (d$y - 0) / ysc
  Sigma <- solve(diag(ncol(Phi)) + crossprod(Phi) / s2)
  mstar <- drop(Sigma %*% crossprod(Phi, yy) / s2)
  expect_equal(fit$state$m, mstar, tolerance = 1e-6)
  expect_equal(fit$state$S, Sigma, tolerance = 1e-6)
})

test_that("the coupled posterior has a higher ELBO than mean field at the same hyperparameters", {
  set.seed(11)
  n <- 400
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$x2 <- 0.7 * d$x1 + 0.3 * d$x2  # correlated inputs: posterior dependence between components
  d$y <- sin(6 * d$x1) + 2 * d$x2 + rnorm(n, sd = 0.3)
  f <- y ~ gp(x1, k = 10, lengthscale = 0.2, variance = 1) + gp(x2, k = 10, lengthscale = 0.3, variance = 1)
  fc <- gpgam(f, data = d, control = ctl_fixed(sigma = 0.3, seed = 1))
  fm <- gpgam(f, data = d, control = ctl_fixed(sigma = 0.3, seed = 1, posterior = "meanfield", iterations = 200))
  expect_gt(fc$elbo, fm$elbo + 1)
  # mean field: the posterior covariance has no cross-component blocks
  expect_equal(max(abs(fm$state$S[1:10, 11:20])), 0)
})

test_that("main effects average to zero over the centring measure and terms add up to the predictor", {
  set.seed(12)
  n <- 600
  d <- data.frame(x1 = runif(n, -1, 2), x2 = rexp(n), z = rnorm(n), g = factor(sample(letters[1:4], n, TRUE)))
  d$y <- cos(2 * d$x1) + log1p(d$x2) + 0.5 * d$z + c(a = 0.3, b = -0.2, c = 0, d = 0.5)[as.character(d$g)] +
    rnorm(n, sd = 0.2)
  fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x1, x2) + z + gp(g), data = d,
               control = gp_control(inducing = 12, iterations = 150, verbose = FALSE, seed = 2))
  for (i in 1:2) {  # nodes of the measure, back on the data scale
    g <- fit$terms$gp[[i]]
    s <- g$nodes[[1]] * g$scaling$scale + g$scaling$center
    nd <- data.frame(x1 = 0.5, x2 = 1, z = 0, g = "a")
    nd <- nd[rep(1, length(s)), ]
    nd[[g$spec$vars]] <- s
    tt <- predict(fit, nd, type = "terms")
    expect_lt(abs(mean(tt[, g$spec$label])), 1e-8)
    expect_gt(sd(tt[, g$spec$label]), 0.05)
  }
  tt <- predict(fit, d, type = "terms", se.fit = TRUE)
  expect_equal(colnames(tt$fit), c("gp(x1)", "gp(x2)", "gp(x1, x2)", "gp(g)", "z"))
  expect_equal(unname(rowSums(tt$fit) + attr(tt$fit, "constant")), unname(predict(fit, d)), tolerance = 1e-10)
  # the interaction is pure: zero average over either input's measure at fixed other input
  g1 <- fit$terms$gp[[1]]
  s1 <- g1$nodes[[1]] * g1$scaling$scale + g1$scaling$center
  nd <- data.frame(x1 = s1, x2 = 0.7, z = 0, g = "a")
  expect_lt(abs(mean(predict(fit, nd, type = "terms")[, "gp(x1, x2)"])), 1e-8)
})

test_that("one gp() term is the foundation's stationary SVGP", {
  set.seed(13)
  d <- data.frame(x = runif(200))
  d$y <- sin(6 * d$x) + rnorm(200, sd = 0.2)
  ctl <- gp_control(inducing = 10, iterations = 100, verbose = FALSE, seed = 3)
  f1 <- gpgam(y ~ gp(x), data = d, control = ctl)
  f2 <- gpgam(y ~ gp(x, centre = FALSE), data = d, control = ctl)
  expect_identical(f1$state$m, f2$state$m)
  expect_equal(f1$terms$gp[[1]]$type, "stationary")
  # and centring a single term changes the kernel (so the default is meaningful)
  f3 <- gpgam(y ~ gp(x, centre = TRUE), data = d, control = ctl)
  expect_equal(f3$terms$gp[[1]]$type, "centred")
})

test_that("anova() shares recover known variance shares of an additive function", {
  set.seed(14)
  n <- 3000
  d <- data.frame(x1 = runif(n, -1, 1), x2 = runif(n, -1, 1), x3 = runif(n, -1, 1))
  # variances over U(-1, 1): var(2 x1) = 4/3, var(sin(pi x2)) = 1/2, var(x3^2) = 4/45
  d$y <- 2 * d$x1 + sin(pi * d$x2) + d$x3^2 + rnorm(n, sd = 0.1)
  fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3), data = d,
               control = gp_control(inducing = 15, verbose = FALSE, seed = 4))
  a <- anova(fit)
  expect_s3_class(a, "gpgam_anova")
  expect_equal(a$term, c("gp(x1)", "gp(x2)", "gp(x3)"))
  expect_equal(sum(a$share), 1)
  v <- c(4 / 3, 1 / 2, 4 / 45)
  expect_equal(a$share, v / sum(v), tolerance = 0.03)
  expect_true(all(a$edf > 0.5))
  # two fits: ELBO comparison
  f0 <- gpgam(y ~ gp(x1) + gp(x2), data = d, control = gp_control(inducing = 15, verbose = FALSE, seed = 4))
  cmp <- anova(f0, fit)
  expect_equal(cmp$ELBO, c(f0$elbo, fit$elbo))
  expect_gt(cmp$`Delta ELBO`[2], 100)  # x3 matters
})

test_that("a factor term is an i.i.d. random effect that recovers level effects", {
  set.seed(15)
  n <- 2000
  L <- 8
  eff <- rnorm(L, sd = 0.7)
  d <- data.frame(x = runif(n), g = factor(sample(LETTERS[1:L], n, TRUE)))
  d$y <- sin(4 * d$x) + eff[as.integer(d$g)] + rnorm(n, sd = 0.3)
  fit <- gpgam(y ~ gp(x) + gp(g), data = d, control = gp_control(inducing = 10, verbose = FALSE, seed = 5))
  est <- predict(fit, data.frame(x = 0.5, g = LETTERS[1:L]), type = "terms", se.fit = TRUE)
  re <- est$fit[, "gp(g)"]
  expect_lt(max(abs((re - mean(re)) - (eff - mean(eff)))), 0.08)
  expect_true(all(est$se.fit[, "gp(g)"] > 0))
  expect_error(predict(fit, data.frame(x = 0.5, g = "Z")), "'Z'")
  expect_equal(fit$params$gp[["gp(g)"]]$n_inducing, L)
})

test_that("plot() draws one panel per term for 1-D, 2-D and factor terms", {
  set.seed(16)
  n <- 300
  d <- data.frame(x1 = runif(n), x2 = runif(n), g = factor(sample(c("u", "v", "w"), n, TRUE)))
  d$y <- sin(4 * d$x1) + d$x1 * d$x2 + as.integer(d$g) / 3 + rnorm(n, sd = 0.2)
  fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x1, x2) + gp(g), data = d,
               control = gp_control(inducing = 9, iterations = 50, verbose = FALSE))
  dir <- tempfile()
  dir.create(dir)
  grDevices::pdf(file.path(dir, "p%03d.pdf"), onefile = FALSE)
  plot(fit)
  grDevices::dev.off()
  expect_length(list.files(dir), 4)
  grDevices::pdf(NULL)
  expect_silent(plot(fit, pages = 1))
  expect_silent(plot(fit, select = 3))
  grDevices::dev.off()
  expect_error(plot(fit, select = 5), "'select'")
})

test_that("overlapping, duplicated and degenerate terms get clear errors or adjustments", {
  set.seed(17)
  d <- data.frame(x1 = runif(100), x2 = runif(100), x3 = runif(100), k = 1, c5 = rep(1:5, 20))
  d$y <- rnorm(100)
  ctl <- gp_control(iterations = 5, verbose = FALSE)
  expect_error(gpgam(y ~ gp(x1, x2) + gp(x2, x3), data = d, control = ctl), "share input.*'x2'")
  expect_error(gpgam(y ~ gp(x1) + gp(x1), data = d, control = ctl), "twice")
  expect_error(gpgam(y ~ gp(x1) + gp(k), data = d, control = ctl), "constant input: 'k'")
  expect_warning(f <- gpgam(y ~ gp(x1) + gp(c5, k = 10), data = d, control = ctl), "'k' = 10 exceeds the 5 unique")
  expect_equal(f$params$gp[["gp(c5)"]]$n_inducing, 5)
  expect_error(gpgam(y ~ gp(x1) + gp(x1, x2), data = d, control = ctl), NA)  # nested: allowed
})

test_that("the rank restriction of seed 004 binds and summary() says so", {
  set.seed(18)
  n <- 500
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$y <- sin(8 * d$x1) + cos(8 * d$x2) + rnorm(n, sd = 0.1)
  ctl <- function(rank) gp_control(inducing = 15, iterations = 200, verbose = FALSE, seed = 6, rank = rank)
  full <- gpgam(y ~ gp(x1) + gp(x2), data = d, control = ctl(NULL))
  low <- gpgam(y ~ gp(x1) + gp(x2), data = d, control = ctl(4))
  expect_gt(full$elbo, low$elbo + 10)
  expect_gt(low$rank_loss, 0.01)
  expect_output(print(summary(low)), "rank restriction")
  expect_lt(sum(vapply(low$params$gp, `[[`, 1, "edf")), 4)  # total edf < rank
})
