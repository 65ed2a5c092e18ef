# Limits in which the sparse variational GP is exact: inducing points at the
# data, fixed hyperparameters and a Gaussian likelihood give the exact GP
# posterior and the exact log marginal likelihood; without a GP a Gaussian
# model is a linear model.

exact_data <- function(n = 40, seed = 1) {
  set.seed(seed)
  d <- data.frame(x1 = runif(n), x2 = runif(n), z = rnorm(n))
  d$y <- 2 + sin(3 * d$x1) + cos(2 * d$x2) + 0.7 * d$z + rnorm(n, sd = 0.3)
  d
}

exact_ctl <- function() {
  qctl(fixed = c("kernel", "inducing", "sigma"), sigma = 0.3, iterations = 1, jitter = 1e-10)
}

for (kern in c("se", "matern32", "matern52")) {
  test_that(paste0("Z = X with fixed hyperparameters gives the exact GP posterior and evidence (", kern, ")"), {
    d <- exact_data()
    set.seed(2)
    nd <- data.frame(x1 = runif(25), x2 = runif(25))
    X <- as.matrix(d[, c("x1", "x2")])
    ls <- c(0.4, 0.6)
    v <- 1.3
    kf <- switch(kern, se = k_se, matern32 = k_matern32, matern52 = k_matern52)
    fit <- gpgam(y ~ gp(x1, x2, inducing = X, lengthscale = c(.4, .6), variance = 1.3, kernel = kern) - 1,
                 data = d, control = exact_ctl())
    C <- kf(X, X, ls, v) + 0.3^2 * diag(nrow(d))
    Ks <- kf(as.matrix(nd), X, ls, v)
    mu <- drop(Ks %*% solve(C, d$y))
    s2 <- v - rowSums(Ks * t(solve(C, t(Ks))))
    p <- predict(fit, nd, se.fit = TRUE)
    expect_named(p, c("fit", "se.fit", "residual.scale"))
    expect_close(p$fit, mu, 1e-6)
    expect_close(p$se.fit^2, s2, 1e-6)
    expect_true(all(s2 > 1e-3))  # the variances compared are not trivially 0
    expect_close(logLik(fit), ldmvnorm0(d$y, C), 1e-6)
    expect_equal(sigma(fit), 0.3, tolerance = 1e-10)
    # the hyperparameters were kept at their values (reported on the data scale)
    g <- fit$params$gp[[1]]
    expect_equal(unname(g$lengthscale), ls, tolerance = 1e-12)
    expect_equal(g$variance, v, tolerance = 1e-12)
    expect_equal(unname(g$inducing), unname(X), tolerance = 1e-12)
    # fitted values at the data: the exact posterior mean there
    expect_close(fitted(fit), kf(X, X, ls, v) %*% solve(C, d$y), 1e-6)
  })
}

test_that("an intercept and a linear term are exact too (vague prior, centred response)", {
  d <- exact_data()
  X <- as.matrix(d[, c("x1", "x2")])
  # the GP itself (centre = FALSE): its level is not moved into the intercept
  fit <- gpgam(y ~ gp(x1, x2, inducing = X, lengthscale = c(.4, .6), variance = 1.3, centre = FALSE, kernel = "se") + z,
               data = d, control = exact_ctl())
  n <- nrow(d)
  # documented prior: sd 100 on the standardised scale (response / sd(y),
  # covariates centred and scaled), response centred at its mean
  tau <- 100 * sd(d$y)
  D <- cbind(1, (d$z - mean(d$z)) / sd(d$z))
  r <- d$y - mean(d$y)
  Kn <- k_se(X, X, c(.4, .6), 1.3) + 0.09 * diag(n)
  C <- Kn + tau^2 * D %*% t(D)
  expect_close(logLik(fit), ldmvnorm0(r, C), 1e-6)
  set.seed(3)
  nd <- data.frame(x1 = runif(10), x2 = runif(10), z = rnorm(10))
  Dn <- cbind(1, (nd$z - mean(d$z)) / sd(d$z))
  Ks <- k_se(as.matrix(nd[, 1:2]), X, c(.4, .6), 1.3) + tau^2 * Dn %*% t(D)
  mu <- mean(d$y) + drop(Ks %*% solve(C, r))
  s2 <- 1.3 + tau^2 * rowSums(Dn^2) - rowSums(Ks * t(solve(C, t(Ks))))
  p <- predict(fit, nd, se.fit = TRUE)
  expect_close(p$fit, mu, 1e-6)
  expect_equal(unname(p$se.fit^2), s2, tolerance = 1e-6)
  # coefficient posterior (GLS with the GP + noise covariance, vague prior)
  A <- t(D) %*% solve(Kn, D) + diag(2) / tau^2
  b <- solve(A, t(D) %*% solve(Kn, r))
  Tm <- rbind(c(1, -mean(d$z) / sd(d$z)), c(0, 1 / sd(d$z)))
  beta <- drop(Tm %*% b) + c(mean(d$y), 0)
  expect_equal(unname(coef(fit)), beta, tolerance = 1e-7)
  expect_equal(unname(vcov(fit)), unname(Tm %*% solve(A) %*% t(Tm)), tolerance = 1e-6)
  expect_named(coef(fit), c("(Intercept)", "z"))
})

test_that("without gp() a Gaussian model reproduces lm()", {
  set.seed(4)
  n <- 200
  d <- data.frame(z = rnorm(n), f = factor(sample(c("a", "b", "c"), n, TRUE)))
  d$y <- 1 + 2 * d$z + c(a = 0, b = 1, c = -0.5)[as.character(d$f)] + rnorm(n, sd = 0.5)
  fit <- gpgam(y ~ z + f, data = d, control = qctl(tol = 1e-10, seed = 1))
  l <- lm(y ~ z + f, data = d)
  expect_named(coef(fit), names(coef(l)))
  expect_equal(coef(fit), coef(l), tolerance = 1e-5)
  # the ELBO is the exact marginal likelihood here; with the coefficients
  # integrated out under the vague prior its maximum in sigma^2 is
  # RSS / (n - p), as in lm (RSS / n is 1% smaller: the tolerance tells them apart)
  rss <- sum(residuals(l)^2)
  expect_equal(sigma(fit), sqrt(rss / (n - 4)), tolerance = 1e-5)
  expect_gt(abs(sigma(fit) / sqrt(rss / n) - 1), 0.005)
  expect_lt(max(abs(fit$gradient)), 1e-6)  # a stationary point
  expect_equal(vcov(fit), vcov(l) * sigma(fit)^2 / summary(l)$sigma^2, tolerance = 1e-4)
  # fitted values and residuals are those of lm
  expect_close(fitted(fit), fitted(l), 1e-5)
  expect_close(residuals(fit), residuals(l), 1e-5)
})

test_that("without gp() a weighted Gaussian model reproduces lm(weights = )", {
  set.seed(5)
  n <- 200
  d <- data.frame(z = rnorm(n), w = runif(n, 0.5, 4))
  d$y <- 1 + 2 * d$z + rnorm(n, sd = 0.5 / sqrt(d$w))
  fit <- gpgam(y ~ z, data = d, weights = w, control = qctl(tol = 1e-10, seed = 1))
  l <- lm(y ~ z, data = d, weights = w)
  expect_equal(coef(fit), coef(l), tolerance = 1e-5)
  # precision weights: sigma is the sd of an observation of weight 1
  expect_equal(sigma(fit), summary(l)$sigma, tolerance = 1e-5)
})

test_that("a flat GP leaves the linear coefficient of lm()", {
  set.seed(6)
  n <- 200
  d <- data.frame(x = runif(n), z = rnorm(n))
  d$y <- 1 + 2 * d$z + rnorm(n, sd = 0.5)
  fit <- gpgam(y ~ gp(x, lengthscale = 1e4 * sd(d$x), variance = 1e-6, k = 10) + z, data = d,
               control = qctl(iterations = 200, fixed = "kernel", seed = 1))
  l <- lm(y ~ z, data = d)
  expect_equal(coef(fit)[["z"]], coef(l)[["z"]], tolerance = 1e-4)
  expect_equal(coef(fit)[["(Intercept)"]], coef(l)[["(Intercept)"]], tolerance = 1e-4)
  expect_equal(fit$params$gp[[1]]$variance, 1e-6, tolerance = 1e-10)
})

test_that("learned Gaussian hyperparameters are a maximum of the ELBO", {
  set.seed(11)
  n <- 200
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$y <- sin(4 * d$x1) + cos(3 * d$x2) + rnorm(n, sd = 0.2)
  # maximum likelihood (priors = FALSE): the ELBO itself is maximised
  fit <- gpgam(y ~ gp(x1, x2) - 1, data = d,
               control = qctl(inducing = 12, fixed = "inducing", priors = FALSE, seed = 1))
  expect_true(fit$converged)
  # the ELBO as a function of the hyperparameters (with the optimal q), as
  # lme4's devfun: log variance, log lengthscales, log noise variance
  f <- gp_objective(fit)
  p0 <- attr(f, "start")
  expect_equal(names(p0), c("gp(x1, x2): log variance", "gp(x1, x2): log lengthscale x1",
                            "gp(x1, x2): log lengthscale x2", "log noise variance"))
  e0 <- f(p0)
  expect_equal(e0$objective, fit$elbo, tolerance = 1e-10)
  expect_close(e0$gradient, fit$gradient[names(p0)], 1e-8)
  gains <- sapply(seq_along(p0), function(k) sapply(log(c(0.97, 1.03)), function(a) {
    p <- p0
    p[k] <- p[k] + a
    f(p)$objective - e0$objective
  }))
  # a wrong gradient would leave the fit where moving a parameter by 3 %
  # raises the ELBO; at a maximum every perturbation lowers it
  expect_true(all(gains < 5e-3), label = paste("ELBO gains", paste(signif(gains, 3), collapse = ", ")))
  # central differences of the ELBO against its gradient, at the fit (where
  # the slope is zero) and at a point away from it
  slope <- function(p) sapply(seq_along(p), function(k) {
    up <- p; dn <- p
    up[k] <- p[k] + 1e-4; dn[k] <- p[k] - 1e-4
    (f(up)$objective - f(dn)$objective) / 2e-4
  })
  away <- p0 + c(0.4, -0.3, 0.2, 0.5)
  s_away <- slope(away)
  expect_gt(max(abs(s_away)), 1)
  expect_close(f(away)$gradient, s_away, 1e-4 * max(abs(s_away)))
  expect_lt(max(abs(slope(p0))), 1e-3 * max(abs(s_away)))
})

test_that("the EP evidence's gradient from gp_objective() matches finite differences", {
  set.seed(12)
  n <- 250
  d <- data.frame(x1 = runif(n), x2 = runif(n), z = rnorm(n))
  d$y <- rbinom(n, 1, pnorm(2 * sin(5 * d$x1) + d$z))
  fit <- gpgam(y ~ gp(x1, x2) + z, data = d, family = binomial("probit"), inference = "ep",
               control = qctl(inducing = 10, seed = 1))
  f <- gp_objective(fit)
  p0 <- attr(f, "start")
  expect_equal(f(p0)$objective, fit$objective + fit$log_prior, tolerance = 1e-10)
  away <- p0 + c(0.3, -0.4, 0.25)
  fd <- sapply(seq_along(away), function(k) {
    up <- away; dn <- away
    up[k] <- away[k] + 1e-5; dn[k] <- away[k] - 1e-5
    (f(up)$objective - f(dn)$objective) / 2e-5
  })
  expect_gt(max(abs(fd)), 0.5)
  expect_close(f(away)$gradient, fd, 1e-5 * max(abs(fd)))
  expect_error(gp_objective(gpgam(y ~ gp(x1), data = d, family = binomial("probit"), inference = "ep",
                                  control = qctl(inducing = 8, batch_size = 100, iterations = 3))), "minibatches")
})

# Reference variational posterior over f at the data (Z = X), in plain R:
# stationarity of the ELBO over q(f) = N(mu, Sigma) gives
#   Sigma^{-1} = K^{-1} + W,  W = -2 dE/ds2,   K^{-1} mu = g,  g = dE/dm,
# solved by damped fixed-point iteration in a numerically stable form.
vi_reference <- function(K, expect_fun, iters = 400) {
  n <- nrow(K)
  mu <- rep(0, n)
  s2 <- diag(K)
  for (it in seq_len(iters)) {
    e <- expect_fun(mu, s2)
    W <- -2 * e[, 3]
    S <- sqrt(W)
    B <- diag(n) + S * t(S * K)
    KS <- t(S * K)  # K diag(S)
    Sigma <- K - KS %*% solve(B, t(KS))
    mu_new <- drop(Sigma %*% (e[, 2] + W * mu))
    mu <- mu + 0.5 * (mu_new - mu)
    s2 <- 0.5 * s2 + 0.5 * diag(Sigma)
  }
  e <- expect_fun(mu, s2)
  W <- -2 * e[, 3]
  S <- sqrt(W)
  B <- diag(n) + S * t(S * K)
  list(mu = mu, s2 = s2, g = e[, 2], S = S, B = B,
       elbo = sum(e[, 1]) - 0.5 * (sum(diag(solve(B))) + sum(mu * e[, 2]) - n +
                                     determinant(B)$modulus[[1]]))
}

for (fam in c("poisson", "probit")) {
  test_that(paste0("Z = X with a fixed kernel gives the optimal Gaussian variational posterior (", fam, ")"), {
    set.seed(13)
    n <- 60
    d <- data.frame(x = sort(runif(n, 0, 5)))
    d$y <- if (fam == "poisson") rpois(n, exp(1 + sin(2 * d$x))) else rbinom(n, 1, pnorm(1.5 * sin(2 * d$x)))
    family <- if (fam == "poisson") poisson() else binomial(link = "probit")
    ls <- 0.8
    v <- 1.5
    fit <- gpgam(y ~ gp(x, inducing = d$x, lengthscale = 0.8, variance = 1.5, kernel = "se") - 1, data = d, family = family,
                 control = qctl(iterations = 300, patience = 300, fixed = c("kernel", "inducing"), jitter = 1e-8))
    K <- k_se(d$x, d$x, ls, v) + 1e-8 * v * diag(n)
    expect_fun <- if (fam == "poisson") {
      # closed form for the Poisson expectation
      function(m, s2) {
        mu <- exp(m + s2 / 2)
        cbind(d$y * m - mu - lgamma(d$y + 1), d$y - mu, -mu / 2)
      }
    } else {
      # verified against integrate() in test-likelihoods.R
      function(m, s2) scalegp:::.lik_expect("probit", d$y, rep(1, n), m, s2, 1, 20)
    }
    ref <- vi_reference(K, expect_fun)
    xs <- seq(0.2, 4.8, length.out = 30)
    Ks <- k_se(xs, d$x, ls, v)
    m_ref <- drop(Ks %*% ref$g)  # K^{-1} mu = g at the optimum
    SKs <- ref$S * t(Ks)
    v_ref <- v - colSums(SKs * solve(ref$B, SKs))
    p <- predict(fit, data.frame(x = xs), se.fit = TRUE)
    expect_close(p$fit, m_ref, 1e-5)
    expect_close(p$se.fit^2, v_ref, 1e-5)
    expect_close(fit$elbo, ref$elbo, 1e-4)
  })
}

test_that("minibatch natural-gradient steps reach the full-batch variational posterior", {
  # fixed kernel and inducing points: only q is optimised, so a small
  # minibatch step must average to the full-batch optimum (the N / batch
  # rescaling of the minibatch statistics is what this checks)
  set.seed(21)
  n <- 4000
  d <- data.frame(x = runif(n, -2, 2))
  d$y <- rbinom(n, 1, pnorm(2 * sin(2 * d$x)))
  Z <- seq(-2, 2, length.out = 12)
  ctl <- function(...) qctl(fixed = c("kernel", "inducing"), seed = 1, ...)
  fo <- y ~ gp(x, inducing = Z, lengthscale = 0.7, variance = 2)
  full <- gpgam(fo, data = d, family = binomial("probit"), control = ctl(iterations = 150, patience = 150))
  mini <- gpgam(fo, data = d, family = binomial("probit"),
                control = ctl(iterations = 400, patience = 400, batch_size = 500, natgrad_step = 0.02))
  expect_equal(mini$control$batch_size, 500L)
  g <- data.frame(x = seq(-1.9, 1.9, length.out = 40))
  a <- predict(full, g, se.fit = TRUE)
  b <- predict(mini, g, se.fit = TRUE)
  expect_lt(max(abs(a$fit - b$fit) / a$se.fit), 0.1)
  expect_lt(max(abs(b$se.fit / a$se.fit - 1)), 0.02)
  expect_equal(mini$elbo, full$elbo, tolerance = 1e-3)
})
