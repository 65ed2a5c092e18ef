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
  fit <- gpgam(y ~ gp(x1, inducing = Z1, lengthscale = 0.3, variance = 0.8, kernel = "se") +
                 gp(x2, inducing = Z2, lengthscale = 0.5, variance = 0.5, kernel = "se") - 1,
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

# Whitened features of a centred SE term at fixed hyperparameters, in plain R
# (data scale inputs x, Z; lengthscale l and variance v on the data scale).
centred_features <- function(fit, i, x, Z, l, v, jitter = 1e-8) {
  g <- fit$terms$gp[[i]]
  sp <- fit$state$specs[[i]]
  ysc <- fit$scaling$y$scale
  xs <- (x - g$scaling$center) / g$scaling$scale
  zs <- (Z - g$scaling$center) / g$scaling$scale
  ls <- l / g$scaling$scale
  vv <- v / ysc^2
  Kuu <- vv * centred_se(zs, zs, ls, sp$nodes[[1]], sp$weights[[1]]) + diag(jitter * vv, length(zs))
  vv * centred_se(xs, zs, ls, sp$nodes[[1]], sp$weights[[1]]) %*% solve(chol(Kuu))
}

# The mean-field optimum for a Gaussian likelihood by coordinate ascent
# (each block's Gaussian optimal given the others' means): its mean, and its
# ELBO up to the residual-variance term both posteriors share.
meanfield_reference <- function(Phis, y, s2, sweeps = 2000) {
  m <- lapply(Phis, function(P) rep(0, ncol(P)))
  S <- lapply(Phis, function(P) solve(diag(ncol(P)) + crossprod(P) / s2))
  for (it in seq_len(sweeps)) for (c in seq_along(Phis)) {
    r <- y - Reduce(`+`, Map(`%*%`, Phis[-c], m[-c]), 0)
    m[[c]] <- drop(S[[c]] %*% crossprod(Phis[[c]], r) / s2)
  }
  mu <- drop(Reduce(`+`, Map(`%*%`, Phis, m)))
  v <- Reduce(`+`, Map(function(P, Sc) rowSums((P %*% Sc) * P), Phis, S))
  ell <- sum(-0.5 * log(2 * pi * s2) - 0.5 * ((y - mu)^2 + v) / s2)
  kl <- sum(mapply(function(mc, Sc) 0.5 * (sum(diag(Sc)) + sum(mc^2) - length(mc) - determinant(Sc)$modulus),
                   m, S))
  list(m = unlist(m), elbo = ell - kl)
}

test_that("coupled and mean-field posteriors at fixed hyperparameters are the independent optima", {
  set.seed(11)
  n <- 400
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$x2 <- 0.7 * d$x1 + 0.3 * d$x2  # correlated inputs: posterior dependence between components
  d$y <- sin(6 * d$x1) + 2 * d$x2 + rnorm(n, sd = 0.3)
  Z1 <- seq(0.05, 0.95, length.out = 10)
  Z2 <- seq(0.05, 0.95, length.out = 10)
  f <- y ~ gp(x1, inducing = Z1, lengthscale = 0.2, variance = 1, kernel = "se") +
    gp(x2, inducing = Z2, lengthscale = 0.3, variance = 1, kernel = "se") - 1
  fc <- gpgam(f, data = d, control = ctl_fixed(sigma = 0.3, jitter = 1e-8))
  fm <- gpgam(f, data = d, control = ctl_fixed(sigma = 0.3, jitter = 1e-8, posterior = "meanfield",
                                               iterations = 3000, patience = 3000))
  ysc <- fc$scaling$y$scale
  yy <- d$y / ysc
  s2 <- (0.3 / ysc)^2
  Phis <- list(centred_features(fc, 1, d$x1, Z1, 0.2, 1), centred_features(fc, 2, d$x2, Z2, 0.3, 1))
  Phi <- do.call(cbind, Phis)
  Sigma <- solve(diag(ncol(Phi)) + crossprod(Phi) / s2)
  mstar <- drop(Sigma %*% crossprod(Phi, yy) / s2)
  expect_equal(fc$state$m, mstar, tolerance = 1e-6)
  mf <- meanfield_reference(Phis, yy, s2)
  expect_close(fm$state$m, mf$m, 1e-6)
  # both ELBOs contain the same residual-variance term: their difference is
  # that of the references
  ell_c <- sum(-0.5 * log(2 * pi * s2) - 0.5 * ((yy - Phi %*% mstar)^2 + rowSums((Phi %*% Sigma) * Phi)) / s2)
  kl_c <- 0.5 * (sum(diag(Sigma)) + sum(mstar^2) - ncol(Phi) - determinant(Sigma)$modulus)
  expect_close(fc$elbo - fm$elbo, (ell_c - kl_c) - mf$elbo, 1e-6)
  # the coupled family contains mean field: its optimum is higher, here by far
  expect_gt(fc$elbo, fm$elbo + 1)
  # mean field: the posterior covariance has no cross-component blocks
  expect_equal(max(abs(fm$state$S[1:10, 11:20])), 0)
})

test_that("at the end of full fits the coupled ELBO is at least the mean-field ELBO", {
  set.seed(12)
  n <- 1000
  z <- runif(n)
  d <- data.frame(x1 = z + 0.15 * rnorm(n), x2 = z + 0.15 * rnorm(n), x3 = runif(n))
  d$y <- sin(2 * d$x1) + 0.5 * d$x2^2 + cos(3 * d$x3) + rnorm(n, sd = 0.5)
  for (fo in list(y ~ gp(x1) + gp(x2), y ~ gp(x1) + gp(x2) + gp(x3) + gp(x1, x3))) {
    ctl <- function(...) gp_control(inducing = 10, seed = 1, verbose = FALSE, ...)
    fc <- gpgam(fo, data = d, control = ctl())
    fm <- gpgam(fo, data = d, control = ctl(posterior = "meanfield"))
    expect_gte(fc$elbo, fm$elbo,
               label = sprintf("%s: coupled ELBO %.2f (gradient norm %.3g), mean field %.2f (gradient norm %.3g)",
                               deparse1(fo), fc$elbo, sqrt(sum(fc$gradient^2)), fm$elbo,
                               sqrt(sum(fm$gradient^2))))
  }
})

test_that("terms are centred over the data, kernels over their measure, and terms add up to the predictor", {
  set.seed(12)
  n <- 600
  d <- data.frame(x1 = runif(n, -1, 2), x2 = rexp(n), z = rnorm(n), g = factor(sample(letters[1:4], n, TRUE)))
  d$y <- cos(2 * d$x1) + log1p(d$x2) + 0.5 * d$z + c(a = 0.3, b = -0.2, c = 0, d = 0.5)[as.character(d$g)] +
    rnorm(n, sd = 0.2)
  fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x1, x2) + z + gp(g), data = d,
               control = gp_control(inducing = 12, iterations = 150, verbose = FALSE, seed = 2))
  # every gp() term sums to zero over the data, as mgcv constrains its smooths
  tt <- predict(fit, d, type = "terms", se.fit = TRUE)
  expect_equal(colnames(tt$fit), c("z", "gp(x1)", "gp(x2)", "gp(x1, x2)", "gp(g)"))  # (mgcv's order)
  for (lab in c("gp(x1)", "gp(x2)", "gp(x1, x2)", "gp(g)")) expect_lt(abs(mean(tt$fit[, lab])), 1e-10, label = lab)
  for (lab in c("gp(x1)", "gp(x2)", "gp(g)")) expect_gt(sd(tt$fit[, lab]), 0.1, label = lab)  # (no true interaction)
  expect_equal(unname(rowSums(tt$fit) + attr(tt$fit, "constant")), unname(predict(fit, d)), tolerance = 1e-10)
  # the centred (ANOVA) kernel: a main effect is constant plus zero-mean over
  # its input's centring measure, i.e. its averages over the measure do not
  # depend on the other inputs; the interaction is pure: its average over
  # either input's measure is the same at any value of the other input
  g1 <- fit$terms$gp[[1]]
  s1 <- g1$nodes[[1]] * g1$scaling$scale + g1$scaling$center
  avg <- function(x2) mean(predict(fit, data.frame(x1 = s1, x2 = x2, z = 0, g = "a"), type = "terms")[, "gp(x1, x2)"])
  expect_lt(abs(avg(0.2) - avg(1.7)), 1e-8)
  expect_lt(abs(avg(0.2) - avg(3.1)), 1e-8)
  # and centre = FALSE leaves a term as the GP itself (no centring over the data)
  f0 <- gpgam(y ~ gp(x1, centre = FALSE) + z, data = d,
              control = gp_control(inducing = 12, verbose = FALSE, seed = 2))
  t0 <- predict(f0, d, type = "terms")
  expect_gt(abs(mean(t0[, "gp(x1)"])), 1e-4)
})

test_that("centring leaves the predictor and moves the terms' level into the intercept", {
  set.seed(19)
  d <- data.frame(x = runif(300), z = rnorm(300))
  d$y <- 2 + sin(5 * d$x) + 0.4 * d$z + rnorm(300, sd = 0.2)
  ctl <- gp_control(inducing = 10, verbose = FALSE, seed = 1)
  fc <- gpgam(y ~ gp(x) + z, data = d, control = ctl)
  fr <- gpgam(y ~ gp(x, centre = FALSE) + z, data = d, control = ctl)
  expect_identical(predict(fc, d, se.fit = TRUE), predict(fr, d, se.fit = TRUE))
  tr <- predict(fr, d, type = "terms")
  tc <- predict(fc, d, type = "terms", se.fit = TRUE)
  expect_close(tc$fit[, "gp(x)"], tr[, "gp(x)"] - mean(tr[, "gp(x)"]), 1e-10)
  expect_close(coef(fc)[["(Intercept)"]], coef(fr)[["(Intercept)"]] + mean(tr[, "gp(x)"]), 1e-10)
  expect_close(coef(fc)[["z"]], coef(fr)[["z"]], 1e-12)
  # the raw intercept is confounded with the level of the GP; the centred one is not
  expect_gt(sqrt(vcov(fr)[1, 1]), 5 * sqrt(vcov(fc)[1, 1]))
  expect_true(all(tc$se.fit[, "gp(x)"] > 0))
})

test_that("one gp() term is a stationary SVGP: q is the closed-form optimum for its kernel", {
  set.seed(13)
  d <- data.frame(x = runif(200))
  d$y <- sin(6 * d$x) + rnorm(200, sd = 0.2)
  Z <- seq(0.05, 0.95, length.out = 8)
  fit <- gpgam(y ~ gp(x, inducing = Z, lengthscale = 0.25, variance = 0.7, kernel = "se") - 1, data = d,
               control = ctl_fixed(sigma = 0.2, jitter = 1e-8))
  expect_equal(fit$terms$gp[[1]]$type, "stationary")
  ysc <- fit$scaling$y$scale
  Kuu <- k_se(Z, Z, 0.25, 0.7 / ysc^2) + diag(1e-8 * 0.7 / ysc^2, 8)
  Phi <- k_se(d$x, Z, 0.25, 0.7 / ysc^2) %*% solve(chol(Kuu))  # the stationary kernel, no centring
  s2 <- (0.2 / ysc)^2
  Sigma <- solve(diag(8) + crossprod(Phi) / s2)
  expect_equal(fit$state$m, drop(Sigma %*% crossprod(Phi, d$y / ysc) / s2), tolerance = 1e-6)
  expect_equal(fit$state$S, Sigma, tolerance = 1e-6)
  # centre = TRUE uses the centred kernel: another posterior
  fc <- gpgam(y ~ gp(x, inducing = Z, lengthscale = 0.25, variance = 0.7, centre = TRUE, kernel = "se") - 1, data = d,
              control = ctl_fixed(sigma = 0.2, jitter = 1e-8))
  expect_equal(fc$terms$gp[[1]]$type, "centred")
  expect_gt(max(abs(fc$state$m - fit$state$m)), 0.01)
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
  # the shares of the true components over these data, each within 0.01
  v <- c(var(2 * d$x1), var(sin(pi * d$x2)), var(d$x3^2))
  for (k in 1:3) expect_lt(abs(a$share[k] - v[k] / sum(v)), 0.01, label = paste("share of", a$term[k]))
  expect_true(all(a$edf > 0.5))
  out <- capture.output(print(a))
  expect_match(out[1], "Variance decomposition")
  expect_identical(a[["p-value"]], unname(summary(fit)$s.table[, "p-value"]))
  expect_true(any(grepl("gp\\(x3\\)", out)))
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
  # a level not seen: the effect's prior, with a warning, and a wider band
  expect_warning(pz <- predict(fit, data.frame(x = 0.5, g = c("A", "Z")), se.fit = TRUE), "'Z' of factor 'g' not seen")
  expect_gt(pz$se.fit[2], pz$se.fit[1] + 0.1)
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
  expect_warning(expect_warning(f <- gpgam(y ~ gp(x1) + gp(c5, k = 10), data = d, control = ctl),
                                "'k' = 10 exceeds the 5 unique"), "only 5 distinct")
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

test_that("centring nodes are quantile(type = 7)'s values, found by selection", {
  set.seed(21)
  q <- (seq_len(40) - 0.5) / 40
  # (from 65536 values: counted in bins first; a skewed sample with an
  # outlier puts most values in one bin)
  for (x in list(runif(1001), c(rep(0, 50), rnorm(70)), round(rnorm(500), 1), c(2, 1), -3, rexp(20000),
                 c(exp(rnorm(2e5, sd = 3)), 1e12), round(runif(1e5), 2)))
    expect_identical(scalegp:::.col_quantiles7(matrix(x), q)[[1]], unname(stats::quantile(x, q, type = 7)))
  X <- cbind(a = rnorm(7e4), b = -runif(7e4))
  # the inputs' mean, sd and range, as colMeans(), sd() and range()
  Y <- cbind(X, c = 1e8 + runif(7e4))
  st <- scalegp:::.col_summary(Y)
  expect_identical(st["mean", ], colMeans(Y))
  expect_identical(st["sd", ], apply(Y, 2, stats::sd))
  expect_identical(unname(st[c("min", "max"), ]), unname(apply(Y, 2, range)))
  expect_identical(scalegp:::.col_quantiles7(X, q), lapply(1:2, function(j) unname(stats::quantile(X[, j], q, type = 7))))
  d <- data.frame(x1 = rnorm(300), x2 = runif(300))
  d$y <- sin(d$x1) + d$x2 + rnorm(300, sd = 0.2)
  fit <- gpgam(y ~ gp(x1) + gp(x2), data = d, control = gp_control(verbose = FALSE, seed = 1, iterations = 2))
  xs <- (d$x1 - mean(d$x1)) / sd(d$x1)
  expect_identical(fit$state$specs[[1]]$nodes[[1]], unname(stats::quantile(xs, q, type = 7)))
})
