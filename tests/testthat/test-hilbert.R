# gp(basis = "hilbert"): the reduced-rank Hilbert-space basis (Solin and
# Sarkka 2020; Riutort-Mayol et al. 2023).  Its covariance against the kernel
# (and against the exact limit of the basis, the kernel with Dirichlet images),
# the fit at fixed hyperparameters against the Bayesian linear model on the
# basis, the gradient of the objective against finite differences, bad input.

# The basis of one Hilbert spec on the internal scale, written from the
# formulas (not the package): sines on the box, log spectral density.
hs_sines <- function(X, centre, L, m) {
  X <- as.matrix(X)
  d <- length(m)
  idx <- as.matrix(expand.grid(lapply(m, seq_len)))  # input 1 fastest, as the package
  out <- matrix(1, nrow(X), nrow(idx))
  for (k in seq_len(d)) {
    t <- X[, k] - centre[k]
    out <- out * outer(t + L[k], idx[, k], function(a, j) sin(pi * j * a / (2 * L[k]))) / sqrt(L[k])
    out[abs(t) > L[k], ] <- 0
  }
  out
}

hs_log_spectrum <- function(kernel, L, m, ls, v) {
  d <- length(m)
  idx <- as.matrix(expand.grid(lapply(m, seq_len)))
  om <- sweep(idx, 2, pi / (2 * L), "*")
  ls <- rep(ls, length.out = d)
  u <- rowSums(sweep(om, 2, ls, "*")^2)
  if (kernel == "se") return(log(v) + d / 2 * log(2 * pi) + sum(log(ls)) - u / 2)
  nu <- if (kernel == "matern32") 1.5 else 2.5
  logC <- d * log(2) + d / 2 * log(pi) + lgamma(nu + d / 2) + nu * log(2 * nu) - lgamma(nu)
  log(v) + logC + sum(log(ls)) - (nu + d / 2) * log(2 * nu + u)
}

hs_kernel <- function(kernel) switch(kernel, se = k_se, matern32 = k_matern32, matern52 = k_matern52)

# The limit of the basis as it grows on a fixed box: the kernel with the
# Dirichlet images, sum over r in Z^d and the 2^d reflections.
hs_image_kernel <- function(kernel, A, B, centre, L, ls, v, R = 3) {
  A <- sweep(as.matrix(A), 2, centre)
  B <- sweep(as.matrix(B), 2, centre)
  d <- ncol(A)
  kf <- hs_kernel(kernel)
  K <- matrix(0, nrow(A), nrow(B))
  shifts <- as.matrix(expand.grid(rep(list(-R:R), d)))
  refl <- as.matrix(expand.grid(rep(list(0:1), d)))
  for (a in seq_len(nrow(shifts))) for (b in seq_len(nrow(refl))) {
    Bi <- B
    for (k in seq_len(d)) {
      Bi[, k] <- if (refl[b, k] == 0) B[, k] - 4 * shifts[a, k] * L[k] else -B[, k] - 2 * L[k] - 4 * shifts[a, k] * L[k]
    }
    K <- K + (-1)^sum(refl[b, ]) * kf(A, Bi, ls, v)
  }
  K
}

# A Hilbert spec (as gp_setup() makes it) over internal columns 0..d-1.
hs_spec <- function(kernel, centre, L, m, ls, v = 1) {
  list(kind = "hilbert", cols = seq_along(m) - 1L, kernel = kernel, log_var = log(v), log_ls = log(ls),
       hs_centre = centre, hs_L = L, hs_m = as.integer(m), learn_kernel = TRUE)
}

hs_cov <- function(spec, X) {
  Phi <- scalegp:::.gp_features(list(spec), as.matrix(X), 1e-6)$Phi
  tcrossprod(Phi)
}

test_that("the package's Hilbert features are the sines times sqrt(S) (1-D, 2-D ARD, 3-D; SE, Matern)", {
  set.seed(1)
  for (kern in c("se", "matern32", "matern52")) for (d in 1:3) {
    m <- c(9, 7, 5)[seq_len(d)]
    L <- c(2.5, 3, 2)[seq_len(d)]
    ctr <- c(0.1, -0.2, 0.3)[seq_len(d)]
    ls <- c(0.5, 0.8, 1.1)[seq_len(d)]
    X <- matrix(runif(40 * d, -2, 2), ncol = d)
    X[1, 1] <- 10  # outside the box: no features
    sp <- hs_spec(kern, ctr, L, m, ls, 1.7)
    f <- scalegp:::.gp_features(list(sp), X, 1e-6)
    ref <- sweep(hs_sines(X, ctr, L, m), 2, exp(hs_log_spectrum(kern, L, m, ls, 1.7) / 2), "*")
    expect_close(f$Phi, ref, 1e-12)
    expect_equal(sum(abs(f$Phi[1, ])), 0)
    expect_equal(max(abs(f$resid)), 0)
  }
})

test_that("the Hilbert covariance tends to the kernel as the basis grows (SE, Matern; 1-D and 2-D ARD)", {
  for (kern in c("se", "matern32", "matern52")) for (d in 1:2) {
    ls <- c(0.3, 0.5)[seq_len(d)]
    g <- seq(-1, 1, length.out = if (d == 1) 101 else 15)
    X <- as.matrix(expand.grid(rep(list(g), d)))  # the data's box, S = 1
    K <- hs_kernel(kern)(X, X, ls, 1)
    # (c, m) growing together: the maximal error over the data's box falls
    grow <- list(c(1.2, 8), c(1.5, 16), c(2.5, 40), c(4, 120))
    if (d == 2) grow <- list(c(1.2, 6), c(1.5, 12), c(2.5, 30), c(4, 60))
    err <- vapply(grow, function(cm) {
      sp <- hs_spec(kern, rep(0, d), rep(cm[1], d), rep(cm[2], d), ls)
      max(abs(hs_cov(sp, X) - K))
    }, 0)
    expect_true(all(diff(err) < 0), label = paste(kern, d, "errors", paste(signif(err, 3), collapse = " ")))
    tol <- c(se = 1e-9, matern52 = 2e-3, matern32 = 2e-2)[[kern]] * if (d == 2) 5 else 1
    expect_lt(err[length(err)], tol)
    # on a fixed box, per element: the basis of m sines differs from its
    # limit (the kernel with Dirichlet images) by at most the spectral mass
    # left out, sum_{j not kept} S(omega_j) / prod L
    L <- rep(1.8, d)
    for (m in c(10, 25, 60)) {
      mm <- rep(if (d == 1) m else ceiling(m / 2), d)
      sp <- hs_spec(kern, rep(0, d), L, mm, ls)
      big <- rep(if (d == 1) 20000 else 700, d)
      s_all <- exp(hs_log_spectrum(kern, L, big, ls, 1))
      idx <- as.matrix(expand.grid(lapply(big, seq_len)))
      kept <- apply(idx <= matrix(mm, nrow(idx), d, byrow = TRUE), 1, all)
      tail_mass <- sum(s_all[!kept]) / prod(L)
      lim <- hs_image_kernel(kern, X, X, rep(0, d), L, ls, 1)
      dev <- max(abs(hs_cov(sp, X) - lim))
      expect_lt(dev, 1.001 * tail_mass + 1e-12)
    }
  }
})

test_that("at the sizes the default picks, the Hilbert covariance is within 0.02 of the kernel over the data", {
  set.seed(2)
  for (kern in c("se", "matern32", "matern52")) for (d in 1:2) {
    n <- 200
    dat <- data.frame(x1 = runif(n, 0, 3), x2 = runif(n, -1, 5))
    dat$y <- sin(dat$x1) + rnorm(n)
    f <- if (d == 1) y ~ gp(x1, basis = "hilbert", kernel = kern) else y ~ gp(x1, x2, basis = "hilbert", kernel = kern)
    fit <- gpgam(f, data = dat, control = qctl(fixed = c("kernel", "sigma"), sigma = 1, iterations = 1))
    sp <- fit$state$specs[[1]]
    h <- fit$terms$gp[[1]]$hilbert
    expect_equal(sp$hs_m, rep(c(32L, c(se = 11L, matern52 = 22L, matern32 = 24L)[[kern]])[d], d))
    expect_equal(h$c, rep(scalegp:::hilbert_c(kern, d), d))
    # the data's box on the internal scale (centred at the midpoints)
    X <- as.matrix(expand.grid(lapply(seq_len(d), function(k)
      sp$hs_centre[k] + seq(-h$S[k], h$S[k], length.out = if (d == 1) 101 else 21))))
    # lengthscales from 1.1 l_min to the longest the box is built for
    for (r in c(1.1, 2, 4)) {
      ls <- pmin(r * h$l_min, h$S)
      sp$log_ls <- log(ls)
      sp$log_var <- 0
      err <- max(abs(hs_cov(sp, X) - hs_kernel(kern)(X, X, ls, 1)))
      expect_lt(err, 0.02)
    }
  }
})

test_that("a one-input term starts with 32 sines, 64 beside a Hilbert term of several inputs", {
  set.seed(3)
  n <- 300
  dat <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n))
  dat$y <- sin(2 * dat$x1) + rnorm(n)
  ctl <- qctl(fixed = c("kernel", "sigma"), sigma = 1, iterations = 1)
  m_of <- function(f) {
    hs <- Filter(function(s) identical(s$kind, "hilbert"), gpgam(f, data = dat, control = ctl)$state$specs)
    vapply(hs, function(s) as.integer(prod(s$hs_m)), 1L)
  }
  expect_identical(m_of(y ~ gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert")), c(32L, 32L))
  expect_identical(m_of(y ~ gp(x1, basis = "hilbert") + gp(x2, x3, basis = "hilbert")), c(64L, 484L))
  # an inducing-point term of two inputs does not change it, nor does a given k
  expect_identical(m_of(y ~ gp(x1, basis = "hilbert") + gp(x2, x3)), 32L)
  expect_identical(m_of(y ~ gp(x1, basis = "hilbert", k = 40) + gp(x2, x3, basis = "hilbert"))[1], 40L)
})

test_that("a Gaussian fit at fixed hyperparameters is the Bayesian linear model on the Hilbert basis", {
  set.seed(3)
  n <- 60
  d <- data.frame(x1 = runif(n, -1, 2), x2 = runif(n, 0, 4))
  d$y <- 1 + sin(2 * d$x1) + cos(d$x2) + rnorm(n, sd = 0.3)
  nd <- data.frame(x1 = runif(30, -1, 2), x2 = runif(30, 0, 4))
  cases <- list(list(f = y ~ gp(x1, basis = "hilbert", lengthscale = 0.6, variance = 1.3, kernel = "se") - 1,
                     vars = "x1", kernel = "se", ls = 0.6),
                list(f = y ~ gp(x1, x2, basis = "hilbert", kernel = "matern52", lengthscale = c(0.7, 1.5),
                                variance = 1.3, k = 10) - 1,
                     vars = c("x1", "x2"), kernel = "matern52", ls = c(0.7, 1.5)))
  # prior weights (noise variance 0.09 / w) and an offset
  wts <- runif(n, 0.5, 2)
  d$o <- rnorm(n, sd = 0.5)
  nd$o <- rnorm(30, sd = 0.5)
  cases[[3]] <- list(f = y ~ gp(x2, basis = "hilbert", kernel = "matern32", lengthscale = 0.9, variance = 0.8) +
                       offset(o) - 1, vars = "x2", kernel = "matern32", ls = 0.9, variance = 0.8, weights = TRUE)
  for (cs in cases) {
    w <- if (isTRUE(cs$weights)) wts else rep(1, n)
    d$wt <- w
    off <- if (isTRUE(cs$weights)) d$o else 0
    off_new <- if (isTRUE(cs$weights)) nd$o else 0
    v <- cs[["variance"]] %||% 1.3
    fit <- gpgam(cs$f, data = d, weights = wt,
                 control = qctl(fixed = c("kernel", "sigma"), sigma = 0.3, iterations = 1))
    # the box the fit chose, on the scale of the data
    sp <- fit$state$specs[[1]]
    sc <- fit$terms$gp[[1]]$scaling
    centre <- sc$center + sp$hs_centre * sc$scale
    L <- sp$hs_L * sc$scale
    # y = Phi w + e, w ~ N(0, diag(S)), e ~ N(0, 0.3^2): whitened Phi diag(sqrt(S))
    sq <- exp(hs_log_spectrum(cs$kernel, L, sp$hs_m, cs$ls, v) / 2)
    P <- sweep(hs_sines(as.matrix(d[cs$vars]), centre, L, sp$hs_m), 2, sq, "*")
    Ps <- sweep(hs_sines(as.matrix(nd[cs$vars]), centre, L, sp$hs_m), 2, sq, "*")
    A <- diag(ncol(P)) + crossprod(P, w * P) / 0.09
    V <- solve(A)
    mv <- V %*% crossprod(P, w * (d$y - off)) / 0.09
    mu <- off_new + drop(Ps %*% mv)
    s2 <- rowSums((Ps %*% V) * Ps)
    p <- predict(fit, nd, se.fit = TRUE)
    expect_close(p$fit, mu, 1e-8)
    expect_close(p$se.fit^2, s2, 1e-8)
    expect_true(all(s2 > 1e-3))
    expect_close(fitted(fit), off + P %*% mv, 1e-8)
    # the ELBO at the exact posterior is the log marginal likelihood
    expect_close(logLik(fit), ldmvnorm0(d$y - off, tcrossprod(P) + diag(0.09 / w)), 1e-6)
    expect_equal(fit$params$gp[[1]]$basis, ncol(P))
    # and summary() says so; with inducing points the ELBO stays a lower bound
    expect_match(summary(fit)$objective_note, "log marginal likelihood itself", fixed = TRUE)
  }
  ind <- gpgam(y ~ gp(x1), data = d, control = qctl(inducing = 10, fixed = "sigma", sigma = 0.3, iterations = 1))
  expect_match(summary(ind)$objective_note, "lower bound", fixed = TRUE)
})

test_that("Hilbert terms are centred over the data and the predictor is unchanged", {
  set.seed(4)
  n <- 150
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$y <- 3 + sin(5 * d$x1) + d$x2^2 + rnorm(n, sd = 0.2)
  fit <- gpgam(y ~ gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert", kernel = "matern52"), data = d,
               control = qctl())
  tp <- predict(fit, d, type = "terms")
  expect_lt(max(abs(colMeans(tp))), 1e-10)
  expect_close(rowSums(tp) + attr(tp, "constant"), predict(fit, d), 1e-10)
  expect_lt(sqrt(mean((fitted(fit) - (3 + sin(5 * d$x1) + d$x2^2))^2)), 0.1)
  expect_output(print(fit), "gp(x1): matern52 kernel (Hilbert basis), 32 basis functions", fixed = TRUE)
  # predictions far beyond the data's range are flagged (the basis holds a box only)
  expect_silent(predict(fit, data.frame(x1 = c(0.5, 1.1), x2 = 0.5)))
  expect_warning(predict(fit, data.frame(x1 = c(0.5, 4), x2 = 0.5)), "gp\\(x1\\): 1 row.*beyond the range of 'x1'")
  # a row three quarters of the way to the wall is flagged, and counted apart from one beyond the wall
  g <- fit$terms$gp[[1]]
  s <- fit$state$specs[[1]]
  at <- function(t) g$scaling$center + t * g$scaling$scale  # (internal distance from the box's centre to data)
  x_mid <- at(s$hs_centre + g$hilbert$S + 0.75 * (s$hs_L - g$hilbert$S))
  expect_warning(predict(fit, data.frame(x1 = c(0.5, x_mid, 4), x2 = 0.5)),
                 paste0("gp\\(x1\\): 2 row\\(s\\) .* walls at ", format(at(s$hs_centre - s$hs_L), digits = 4),
                        " and ", format(at(s$hs_centre + s$hs_L), digits = 4), " \\(1 beyond the walls\\)"))
})

test_that("the objective's gradient with Hilbert terms matches finite differences", {
  set.seed(5)
  n <- 150
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n))
  d$y <- sin(4 * d$x1) + cos(3 * d$x2) * d$x3 + rnorm(n, sd = 0.3)
  d$cnt <- rpois(n, exp(0.5 + sin(4 * d$x1)))
  slope <- function(f, p) sapply(seq_along(p), function(k) {
    up <- p; dn <- p
    up[k] <- p[k] + 1e-4; dn[k] <- p[k] - 1e-4
    (f(up)$objective - f(dn)$objective) / 2e-4
  })
  cases <- list(
    list(f = y ~ gp(x1, basis = "hilbert") + gp(x2, x3, basis = "hilbert", kernel = "matern32", k = 8),
         family = gaussian(), ctl = qctl(priors = FALSE), tol = 1e-5),
    list(f = y ~ gp(x1, basis = "hilbert", kernel = "matern52") + gp(x2, x3, basis = "hilbert", k = 8, ard = FALSE),
         family = gaussian(), ctl = qctl(discrete = TRUE), tol = 1e-5),
    list(f = cnt ~ gp(x1, basis = "hilbert"), family = poisson(), ctl = qctl(), tol = 1e-3))
  for (cs in cases) {
    # (the long lengthscale of x2 in gp(x2, x3) draws the box warning)
    fit <- suppressWarnings(gpgam(cs$f, data = d, family = cs$family, control = cs$ctl))
    f <- gp_objective(fit)
    p0 <- attr(f, "start")
    expect_equal(f(p0)$objective, fit$objective + fit$log_prior, tolerance = 1e-8)
    away <- p0 + rep(c(0.3, -0.2, 0.25, 0.15), length.out = length(p0))
    s_away <- slope(f, away)
    expect_gt(max(abs(s_away)), 0.5)
    g <- f(away)$gradient
    expect_close(g, s_away, cs$tol * max(abs(s_away)),
                 label = paste(deparse1(cs$f), "gradient", paste(signif(g - s_away, 3), collapse = " ")))
  }
})

test_that("bad Hilbert input is refused naming the argument", {
  d <- data.frame(a = runif(30), b = runif(30), c = runif(30), e = runif(30), f = gl(3, 10), y = rnorm(30))
  expect_error(gp(a, b, c, e, basis = "hilbert"), "'basis' .*1 to 3 inputs")
  expect_error(gp(a, basis = "fourier"), "'basis' must be one of")
  expect_error(gp(a, b, basis = "hilbert", k = c(10, 1)), "'k' must be at least 2")
  expect_error(gp(a, basis = "hilbert", k = c(10, 12)), "'k'")
  expect_error(gp(a, b, basis = "hilbert", k = c(10, 15, 3)), "'k' of a Hilbert term must be one number or one per input \\(2\\), not 3")
  expect_equal(gpgam(y ~ te(a, b, k = c(6, 5), basis = "hilbert"), data = d,
                     control = qctl(iterations = 1, fixed = "kernel"))$state$specs[[1]]$hs_m, c(6L, 5L))
  expect_error(gp(a, basis = "hilbert", inducing = 1:3), "'inducing' has no meaning")
  expect_error(gpgam(y ~ gp(f, basis = "hilbert"), data = d, control = qctl()), "'basis' .*numeric inputs")
  # beside gp(a), a Hilbert term over (a, b, c) would have to keep s_b, s_c and s_b s_c apart from their
  # products with s_a, which no centring of its sines along inputs gives
  expect_error(gpgam(y ~ gp(a, basis = "hilbert") + gp(a, b, c, basis = "hilbert"), data = d, control = qctl()),
               "'basis' = \"hilbert\" of 'gp\\(a, b, c\\)' beside 'gp\\(a\\)'")
  expect_error(gpgam(y ~ gp(a, basis = "hilbert"), data = d, inference = "ep", control = qctl()),
               "'inference' .*does not support")
})

test_that("a Hilbert term with a numeric or factor `by` fits", {
  set.seed(6)
  n <- 200
  d <- data.frame(x = runif(n), z = rnorm(n), g = gl(2, n / 2))
  d$y <- sin(4 * d$x) * d$z + ifelse(d$g == "1", cos(3 * d$x), -cos(3 * d$x)) + rnorm(n, sd = 0.2)
  fit <- gpgam(y ~ gp(x, by = z, basis = "hilbert") + g + gp(x, by = g, basis = "hilbert", kernel = "matern52"),
               data = d, control = qctl())
  truth <- sin(4 * d$x) * d$z + ifelse(d$g == "1", cos(3 * d$x), -cos(3 * d$x))
  expect_lt(sqrt(mean((fitted(fit) - truth)^2)), 0.12)
  # far beyond the data: a warning per term that is not zero on the rows (not for the other level's curve)
  w <- character()
  withCallingHandlers(predict(fit, data.frame(x = 3, z = 1, g = "1")),
                      warning = function(e) { w <<- c(w, conditionMessage(e)); invokeRestart("muffleWarning") })
  expect_length(w, 2)
  expect_match(w, "^gp\\(x\\):z: |^gp\\(x\\):g1: ")
})

test_that("a Hilbert term has the hyperparameter priors of the default basis's model, whatever its size", {
  set.seed(8)
  n <- 300
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n))
  d$y <- sin(5 * d$x1) + rnorm(n, sd = 0.3)
  ctl <- gp_control(iterations = 2, verbose = FALSE, threads = 1, seed = 1)
  for (f in list(c("gp(x1", ")"), c("gp(x1, x2", ")"), c("gp(x1, x2, x3", ")"))) {
    fi <- gpgam(as.formula(paste0("y ~ ", f[1], f[2])), data = d, control = ctl)
    for (k in list(NULL, 7L)) {
      # (two iterations: the basis checks may warn)
      fh <- suppressWarnings(gpgam(as.formula(paste0("y ~ ", f[1], ", basis = \"hilbert\"",
                                                     if (!is.null(k)) paste0(", k = ", k), f[2])), data = d, control = ctl))
      si <- fi$state$specs[[1]]
      sh <- fh$state$specs[[1]]
      expect_equal(sh$ls_a, si$ls_a, tolerance = 1e-12)
      expect_equal(sh$ls_b, si$ls_b, tolerance = 1e-12)
      expect_equal(sh$sd_prior, si$sd_prior, tolerance = 1e-12)
    }
  }
  # gp_control(inducing = ) sets the prior's spacing for both bases
  fi <- gpgam(y ~ gp(x1), data = d, control = gp_control(iterations = 2, verbose = FALSE, inducing = 40))
  fh <- gpgam(y ~ gp(x1, basis = "hilbert"), data = d, control = gp_control(iterations = 2, verbose = FALSE, inducing = 40))
  expect_equal(fh$state$specs[[1]]$ls_b, fi$state$specs[[1]]$ls_b, tolerance = 1e-12)
})

test_that("a lengthscale too short for the basis grows it, one too long widens the box, and the fit recovers the truth", {
  set.seed(7)
  n <- 400
  d <- data.frame(x = runif(n))
  truth <- function(x) sin(30 * x)
  d$y <- truth(d$x) + rnorm(n, sd = 0.1)
  # 10 sines cannot hold a lengthscale of about 0.05 on [0, 1]
  fit <- gpgam(y ~ gp(x, basis = "hilbert", k = 10, kernel = "se"), data = d, control = qctl())
  h <- fit$terms$gp[[1]]$hilbert
  expect_gte(fit$hilbert_refits, 1)
  # a verbose fit says what each refit changes
  msg <- character()
  withCallingHandlers(capture.output(gpgam(y ~ gp(x, basis = "hilbert", k = 10, kernel = "se"), data = d,
                                           control = gp_control(verbose = TRUE))),
                      message = function(m) { msg <<- c(msg, conditionMessage(m)); invokeRestart("muffleMessage") })
  notes <- grep("Hilbert basis refit", msg, value = TRUE)
  expect_length(notes, fit$hilbert_refits)
  expect_match(notes[1], "refit 1 \\(of at most 4\\).*gp\\(x\\): 10 -> [0-9]+ sines")
  expect_gt(h$m, 10)
  expect_equal(fit$state$specs[[1]]$hs_m, h$m)
  ls <- exp(fit$state$specs[[1]]$log_ls)
  expect_gte(ls, 1.1 * h$l_min)
  nd <- data.frame(x = seq(0.02, 0.98, length.out = 200))
  expect_lt(sqrt(mean((predict(fit, nd) - truth(nd$x))^2)), 0.05)
  # a smooth trend: its lengthscale is long against the data's range
  d$y2 <- 2 * d$x + 0.3 * d$x^2 + rnorm(n, sd = 0.1)
  fit2 <- gpgam(y2 ~ gp(x, basis = "hilbert"), data = d, control = qctl())
  h2 <- fit2$terms$gp[[1]]$hilbert
  expect_equal(fit2$state$specs[[1]]$hs_L, h2$c * h2$S)
  expect_lt(sqrt(mean((predict(fit2, nd) - (2 * nd$x + 0.3 * nd$x^2))^2)), 0.05)
  # gp_check() reports each input's basis: the grown basis, the fitted
  # lengthscale and the shortest the sines represent (2 L q / (pi m), data scale)
  chk <- NULL
  out <- capture.output(chk <- gp_check(fit, plot = FALSE, rep = 20))
  expect_true(any(grepl("Hilbert bases, per input", out)))
  tab <- chk$hilbert
  expect_equal(nrow(tab), 1)
  expect_equal(tab$sines, h$m)
  sc <- fit$terms$gp[[1]]$scaling$scale
  expect_equal(tab$lengthscale, unname(fit$params$gp[[1]]$lengthscale), tolerance = 1e-12)
  expect_equal(tab$shortest, 2 * h$L * stats::qnorm(0.995) / (pi * h$m) * sc, tolerance = 1e-12)
  expect_gt(tab$lengthscale, 1.1 * tab$shortest)
  expect_equal(tab$status, "ok")
  # a lengthscale the basis cannot represent: a warning with the remedy, k
  # larger; or, where the refit's basis would pass the cap (terms of several
  # inputs), one warning that advises inducing points
  fs <- fit
  fs$state$specs[[1]]$log_ls <- log(0.5 * h$l_min)
  expect_warning(scalegp:::hilbert_check(fs), "near the shortest its Hilbert basis .* larger k")
  expect_warning(scalegp:::hilbert_check(fs, max_basis = h$m),
                 paste0("gp\\(x\\): its fitted lengthscales need a Hilbert basis of [0-9]+ functions .* more than the ",
                        h$m, " a refit gives; it kept ", h$m, ", with status short .* basis = \"inducing\""))
  # a kernel held fixed is reported as such; a fit without Hilbert terms has no table
  fit3 <- gpgam(y ~ gp(x, basis = "hilbert", k = 40, lengthscale = 0.05, variance = 1), data = d,
                control = qctl(fixed = "kernel"))
  expect_equal(scalegp:::hilbert_table(fit3)$status, "fixed")
  fit4 <- gpgam(y ~ gp(x), data = d, control = qctl())
  expect_null(scalegp:::hilbert_table(fit4))
  # an input a two-input term does not use: its lengthscale runs long, the
  # box reaches its widest, and that is reported without a warning
  d$z <- runif(n)
  expect_warning(fit5 <- gpgam(y ~ gp(x, z, basis = "hilbert"), data = d, control = qctl()), NA)
  t5 <- scalegp:::hilbert_table(fit5)
  expect_equal(t5$status[t5$input == "x"], "ok")
  expect_true(t5$status[t5$input == "z"] %in% c("ok", "widest box"))
  expect_gt(t5$lengthscale[t5$input == "z"], 5 * t5$lengthscale[t5$input == "x"])
})

test_that("the adaptation halves l_min on a narrower box for a short lengthscale and widens the box for a long one", {
  # hilbert_adapt() on a hand-made setup: one term, inputs of half-range S
  adapt <- function(kernel, m, cc, S, ls) {
    L <- cc * S
    l_min <- scalegp:::hilbert_l_min(kernel, L, m)
    comp <- list(kind = "hilbert", learn_kernel = TRUE, kernel = kernel, log_var = 0, log_ls = log(ls),
                 hs_centre = rep(0, length(m)), hs_L = L, hs_m = as.integer(m), log_ls_min = log(l_min / 2))
    setup <- list(comps = list(comp),
                  terms = list(gp = list(list(hilbert = list(m = as.integer(m), c = cc, S = S, L = L, l_min = l_min)))))
    out <- scalegp:::hilbert_adapt(setup, list(specs = list(list(log_var = 0.3, log_ls = log(ls)))))
    list(old = setup$terms$gp[[1]]$hilbert, new = if (!is.null(out)) out$terms$gp[[1]]$hilbert, comp = out$comps[[1]])
  }
  rule <- function(kernel, l, S) {
    k <- scalegp:::hilbert_constants(kernel)
    pmax(1.2, k$a1 * l / S, 1 + k$r * l / (2 * S))
  }
  # two inputs on the default box of Matern 5/2 (c = 4.1, 22 sines): the
  # first input is short (0.3 < 1.1 l_min = 0.526), the second is not
  S <- c(1, 2)
  a <- adapt("matern52", c(22, 22), c(4.1, 4.1), S, c(0.3, 1.6))
  l0 <- a$old$l_min
  expect_equal(a$new$c[1], rule("matern52", 1.375 * l0[1], S[1]), tolerance = 1e-12)
  expect_lt(a$new$c[1], 4.1)
  expect_lte(a$new$l_min[1], l0[1] / 2 * (1 + 1e-12))
  expect_gt(a$new$l_min[1], l0[1] / 2 * (a$new$m[1] - 1) / a$new$m[1])
  expect_equal(a$new$m[2], 22L)
  expect_equal(a$new$c[2], 4.1)
  expect_equal(a$comp$hs_L, a$new$c * S, tolerance = 1e-12)
  expect_equal(a$comp$hs_m, a$new$m)
  expect_equal(a$comp$log_ls_min, log(a$new$l_min / 2), tolerance = 1e-12)
  expect_equal(a$comp$log_var, 0.3)
  # a box already narrower than the rule at 1.375 l_min stays: twice the sines
  b <- adapt("se", 10, 1.2, 1, 0.1)
  expect_equal(b$new$c, 1.2)
  expect_equal(b$new$m, 20L)
  # a long lengthscale widens the box to the rule at 1.25 l (at most 8 half-
  # ranges), keeping the sines the wider box needs for half of it
  w <- adapt("matern52", 64, 4.1, 1, 1.5)
  expect_equal(w$new$c, rule("matern52", 1.25 * 1.5, 1), tolerance = 1e-12)
  expect_equal(w$new$m, 64L)
  expect_equal(adapt("matern52", 64, 4.1, 1, 3)$new$c, 8)
  # a lengthscale the basis represents changes nothing
  expect_null(adapt("matern52", c(22, 22), c(4.1, 4.1), S, c(0.8, 1.6))$new)
  # the refit starts from the fitted hyperparameters and inducing inputs of the other components (on the
  # mixed model of a prompt trial, a Hilbert refit beside an inducing-point ti() of three inputs took 131 s
  # and 407 iterations with them, 193 s and 574 without, to a lower optimum)
  L <- 4.1
  hs <- list(kind = "hilbert", learn_kernel = TRUE, kernel = "matern52", log_var = 0, log_ls = log(0.1), hs_centre = 0,
             hs_L = L, hs_m = 22L, log_ls_min = log(scalegp:::hilbert_l_min("matern52", L, 22) / 2))
  ind <- list(kind = "stationary", learn_kernel = TRUE, kernel = "matern52", log_var = 0, log_ls = c(0, 0),
              Z = matrix(0, 5, 2))
  setup <- list(comps = list(hs, ind), terms = list(gp = list(
    list(hilbert = list(m = 22L, c = 4.1, S = 1, L = L, l_min = scalegp:::hilbert_l_min("matern52", L, 22))), list())))
  Zfit <- matrix(seq(-1, 1, length.out = 10), 5, 2)
  out <- scalegp:::hilbert_adapt(setup, list(specs = list(list(log_var = 0.3, log_ls = log(0.1)),
                                                          list(log_var = -0.5, log_ls = c(0.2, 0.4), Z = Zfit))))
  expect_gt(out$comps[[1]]$hs_m, 22L)
  expect_identical(out$comps[[2]]$Z, Zfit)
  expect_identical(out$comps[[2]]$log_ls, c(0.2, 0.4))
  expect_identical(out$comps[[2]]$log_var, -0.5)
})

test_that("Hilbert fits are identical for any number of threads (rows and discretised)", {
  set.seed(8)
  n <- 600
  d <- data.frame(x1 = runif(n), x2 = runif(n))
  d$y <- sin(5 * d$x1) + cos(4 * d$x2) + rnorm(n, sd = 0.3)
  for (disc in c(FALSE, TRUE)) {
    fits <- lapply(1:2, function(th) gpgam(y ~ gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert"), data = d,
                                           control = qctl(threads = th, discrete = disc)))
    expect_identical(fitted(fits[[1]]), fitted(fits[[2]]))
    expect_identical(fits[[1]]$objective, fits[[2]]$objective)
  }
})

test_that("a Hilbert basis centred along inputs: its features, ti(), and a term beside its main effects", {
  # the features: products over inputs of (sine less its shift) times sqrt(S), against the formulas
  set.seed(21)
  X <- cbind(runif(50, -1, 1), runif(50, -1, 1))
  sp <- hs_spec("matern52", c(0, 0), c(2.5, 3), c(5, 4), c(0.7, 1.1), 1.3)
  sh <- list(seq(0.01, 0.05, length.out = 5), c(-0.02, 0, 0.03, 0.01))
  sp$hs_shift <- sh
  Phi <- scalegp:::.gp_features(list(sp), X, 1e-6)$Phi
  s1 <- sweep(hs_sines(X[, 1, drop = FALSE], 0, 2.5, 5), 2, sh[[1]])
  s2 <- sweep(hs_sines(X[, 2, drop = FALSE], 0, 3, 4), 2, sh[[2]])
  want <- s1[, rep(1:5, 4)] * s2[, rep(1:4, each = 5)]
  want <- sweep(want, 2, exp(hs_log_spectrum("matern52", c(2.5, 3), c(5, 4), c(0.7, 1.1), 1.3) / 2), "*")
  expect_equal(max(abs(Phi - want)), 0, tolerance = 1e-14)
  # beyond a wall the sines vanish, so a shifted input's table is minus its shift there: the features go on
  # at their values at the wall (no jump); a row with a NaN input has none
  Xw <- rbind(c(2.5 - 1e-9, 0.3), c(2.5, 0.3), c(4, 0.3), c(NA, 0.3))
  Pw <- scalegp:::.gp_features(list(sp), Xw, 1e-6)$Phi
  expect_lt(max(abs(Pw[1, ] - Pw[3, ])), 1e-7)
  expect_lt(max(abs(Pw[2, ] - Pw[3, ])), 1e-14)  # (the sines at the wall: sin(j pi), 0 to rounding)
  expect_gt(max(abs(Pw[3, ])), 1e-3)
  expect_identical(Pw[4, ], rep(0, ncol(Pw)))
  sp$hs_shift <- sh[1]
  expect_error(scalegp:::.gp_features(list(sp), X, 1e-6), "shifts are one vector per input")

  set.seed(22)
  n <- 400
  d <- data.frame(x = runif(n), z = runif(n))
  truth <- sin(2 * pi * d$x) + 4 * (d$z - 0.5)^2 + 6 * (d$x - 0.5) * (d$z - 0.5)
  d$y <- truth + rnorm(n, sd = 0.2)
  ctl <- qctl(seed = 3)
  f_ti <- gpgam(y ~ ti(x, basis = "hilbert") + ti(z, basis = "hilbert") + ti(x, z, basis = "hilbert"), data = d,
                control = ctl)
  h <- f_ti$terms$gp[[3]]$hilbert
  expect_identical(h$centred, 1:2)
  expect_gt(f_ti$hilbert_refits, 0)  # (the shifts below are those of the refit's box and sines)
  # the pure interaction averages to the same value along x over the data's x at any z (and along z):
  # its sines are centred over the data along both inputs (the constant is the reported curve's centring)
  lab <- colnames(predict(f_ti, d[1:2, ], type = "terms"))[3]
  along <- function(fit, vary, at) {
    vapply(at, function(a) {
      nd <- d
      nd[[setdiff(c("x", "z"), vary)]] <- a
      mean(predict(fit, nd, type = "terms")[, lab])
    }, 1)
  }
  for (v in c("x", "z")) {
    m <- along(f_ti, v, c(0.05, 0.3, 0.6, 0.97))
    expect_lt(max(abs(m - m[1])), 1e-10)
  }
  # (the term itself varies with z: at x = 0.9 the true interaction goes from -1.1 to 1.1)
  expect_gt(abs(diff(predict(f_ti, data.frame(x = 0.9, z = c(0.05, 0.97)), type = "terms")[, lab])), 1)
  expect_lt(sqrt(mean((fitted(f_ti) - truth)^2)), 0.08)
  # gp(x) + gp(z) + gp(x, z) is the same model: its two-input term centred along both inputs
  f_gp <- gpgam(y ~ gp(x, basis = "hilbert") + gp(z, basis = "hilbert") + gp(x, z, basis = "hilbert"), data = d,
                control = ctl)
  expect_identical(f_gp$terms$gp[[3]]$hilbert$centred, 1:2)
  expect_equal(fitted(f_gp), fitted(f_ti), tolerance = 1e-10)
  # beside gp(x) alone, gp(x, z) keeps z's main effect: its sines are centred along z only
  f_x <- gpgam(y ~ gp(x, basis = "hilbert") + gp(x, z, basis = "hilbert"), data = d, control = ctl)
  expect_identical(f_x$terms$gp[[2]]$hilbert$centred, 2L)
  lab <- colnames(predict(f_x, d[1:2, ], type = "terms"))[2]
  m <- along(f_x, "z", c(0.05, 0.5, 0.97))
  expect_lt(max(abs(m - m[1])), 1e-10)
  expect_lt(sqrt(mean((fitted(f_x) - truth)^2)), 0.08)
  # a Hilbert main effect beside an inducing-point interaction over its input
  f_mix <- gpgam(y ~ gp(x, basis = "hilbert") + gp(x, z), data = d, control = ctl)
  expect_s3_class(f_mix, "gpgam")
  # the engine line: an all-Hilbert Gaussian fit has the exact posterior on its bases, not a variational one
  expect_output(print(f_ti), "(exact Gaussian posterior on fixed bases, passes over distinct covariate values (exact))",
                fixed = TRUE)
  expect_output(print(f_mix), "(sparse variational GP, coupled posterior, ", fixed = TRUE)

  # centred where the inducing basis centres its kernel: not a term with `by` (unless centre = TRUE) nor
  # one with centre = FALSE; three inputs beside the terms over all but one; overlaps no centring expresses
  d$f <- gl(2, n / 2)
  d$w <- runif(n)
  ctl1 <- qctl(seed = 3, iterations = 2)
  centred_of <- function(fit) lapply(fit$terms$gp, function(g) g$hilbert$centred)
  expect_identical(centred_of(gpgam(y ~ gp(x) + gp(x, z, by = f, basis = "hilbert"), data = d, control = ctl1))[2:3],
                   list(integer(), integer()))
  expect_identical(centred_of(gpgam(y ~ gp(x) + gp(x, z, basis = "hilbert", centre = FALSE), data = d,
                                    control = ctl1))[[2]], integer())
  # (its lengthscales after 2 iterations ask for more sines than a refit gives: a warning, not tested here)
  expect_identical(centred_of(suppressWarnings(gpgam(y ~ gp(x) + gp(x, z) + gp(x, z, w, basis = "hilbert"), data = d,
                                                     control = ctl1)))[[3]], 3L)
  expect_error(gpgam(y ~ gp(x, z) + gp(w) + gp(x, z, w, basis = "hilbert"), data = d, control = ctl1),
               "'basis' = \"hilbert\" of 'gp\\(x, z, w\\)' beside 'gp\\(x, z\\)', 'gp\\(w\\)'")
  expect_error(gpgam(y ~ gp(x) + gp(x, z, w, by = f, centre = TRUE, basis = "hilbert"), data = d, control = ctl1),
               "'basis' = \"hilbert\" of 'gp\\(x, z, w\\):f1' beside 'gp\\(x\\)'")
})

test_that("Hilbert fits with their sums formed on a 2-worker PSOCK cluster equal the fit in one process", {
  set.seed(12)
  n <- 1500
  d <- data.frame(x1 = round(runif(n), 1), x2 = runif(n), x3 = runif(n), z = rnorm(n), wt = runif(n, 0.5, 2),
                  off = rnorm(n, sd = 0.1))
  d$y <- sin(2 * pi * d$x1) + d$x2^2 + cos(3 * d$x2 * d$x3) + 0.3 * d$z + d$off + rnorm(n, sd = 0.3)
  d$b <- as.numeric(d$y > 1)
  old <- Sys.getenv("R_TESTS")
  Sys.setenv(R_TESTS = "")
  cl <- parallel::makeCluster(2)
  Sys.setenv(R_TESTS = old)
  on.exit(parallel::stopCluster(cl))
  ctl <- qctl(seed = 3, bins = 200, discrete = TRUE)
  ctl2 <- qctl(seed = 3, bins = 200, cluster = cl)
  # Gaussian (the fixed design's statistics from the shards), with weights and an offset; binomial (each
  # pass over the rows on the workers); ti() (sines centred along its inputs)
  models <- list(list(y ~ gp(x1, basis = "hilbert") + gp(x2, x3, basis = "hilbert") + z + offset(off), gaussian()),
                 list(b ~ gp(x1, basis = "hilbert") + gp(x2, x3, basis = "hilbert") + z, binomial()),
                 list(y ~ ti(x2, basis = "hilbert") + ti(x3, basis = "hilbert") + ti(x2, x3, basis = "hilbert"), gaussian()))
  for (m in models) {
    w <- if (m[[2]]$family == "gaussian") d$wt else NULL
    f1 <- gpgam(m[[1]], data = d, family = m[[2]], weights = w, control = ctl)
    f2 <- gpgam(m[[1]], data = d, family = m[[2]], weights = w, control = ctl2)
    expect_true(f1$converged && f1$discrete && f2$discrete)
    expect_equal(f2$control$distributed, 2L)
    expect_identical(f2$elbo, f1$elbo)
    expect_identical(f2$state$m, f1$state$m)
    # (at the rows' inputs: interpolated from the rounded values' grid in one process, evaluated there on a cluster)
    expect_equal(fitted(f2), fitted(f1), tolerance = 1e-7)
  }
})
