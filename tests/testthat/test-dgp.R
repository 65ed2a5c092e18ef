# Tests of dgp() (deep GPs by approximate EP, Bui et al. 2016): the C++
# energy and gradient against a slow R implementation of the same energy
# (Bui et al. 2016), written apart from the C++ code, with its gradient; the fit,
# its methods, determinism across thread counts and bad input.

# ---- independent reference implementation of the energy (slow; tests only)
dgp_reference <- local({
  jit <- 1e-6
  kmat <- function(A, B, ell2, sf2) {
    K <- matrix(0, nrow(A), nrow(B))
    for (i in seq_len(nrow(A))) K[i, ] <- sf2 * exp(-0.5 * colSums((t(B) - A[i, ])^2 / ell2))
    K
  }
  psi1f <- function(mu, s, Z, ell2, sf2) {
    a <- ell2 + s
    sf2 * prod(sqrt(ell2 / a)) * exp(-0.5 * colSums((t(Z) - mu)^2 / a))
  }
  psi2f <- function(mu, s, Z, ell2, sf2) {
    b <- ell2 + 2 * s; M <- nrow(Z); P <- matrix(0, M, M)
    for (i in 1:M) for (j in 1:M) {
      zb <- (Z[i, ] + Z[j, ]) / 2
      P[i, j] <- sf2^2 * prod(sqrt(ell2 / b)) *
        exp(-sum((Z[i, ] - Z[j, ])^2 / (4 * ell2)) - sum((mu - zb)^2 / b))
    }
    P
  }
  mkR <- function(rho, M) { R <- matrix(0, M, M); R[upper.tri(R, diag = TRUE)] <- rho; diag(R) <- exp(diag(R)); R }
  phi <- function(m, S) 0.5 * as.numeric(determinant(S)$modulus) + 0.5 * sum(m * solve(S, m))

  dgp_energy <- function(par, X, y, N, idx = seq_len(nrow(X)), grad = FALSE) {
    L <- length(par); beta <- (N - 1) / N; B <- length(idx)
    Q <- lapply(seq_len(L), function(l) {              # shared per-(l,d) quantities
      ly <- par[[l]]; ell2 <- exp(2 * ly$lell); sf2 <- exp(2 * ly$lsf)
      lapply(seq_along(ly$Z), function(d) {
        Z <- ly$Z[[d]]; M <- nrow(Z)
        K <- kmat(Z, Z, ell2, sf2) + jit * diag(M); Ki <- solve(K)
        Lam <- crossprod(mkR(ly$rho[[d]], M)); tau <- ly$tau[[d]]
        S <- solve(Ki + Lam); m <- S %*% tau
        Sh <- solve(Ki + beta * Lam); mh <- Sh %*% (beta * tau)
        C <- if (l == 1) Sh else Sh + mh %*% t(mh)
        list(K = K, Ki = Ki, S = S, m = m, Sh = Sh, mh = mh, C = C,
             Ah = Ki %*% mh, Bh = Ki %*% C %*% Ki - Ki, GA = rep(0, M), GB = matrix(0, M, M))
      })
    })
    E <- 0
    for (l in 1:L) for (q in Q[[l]]) E <- E + 0.5 * as.numeric(determinant(q$K)$modulus) +
      (N - 1) * phi(q$m, q$S) - N * phi(q$mh, q$Sh)
    dir <- lapply(par, function(ly) list(ell2 = 0 * ly$lell, sf2 = 0, sn2 = 0,
                                         Z = lapply(ly$Z, function(z) 0 * z)))
    sumlogZ <- 0
    for (n in idx) {
      mu <- X[n, ]; s <- NULL; cache <- vector("list", L)
      for (l in 1:L) {                                   # forward (cavity)
        ly <- par[[l]]; ell2 <- exp(2 * ly$lell); sf2 <- exp(2 * ly$lsf); sn2 <- exp(2 * ly$lsn)
        Dout <- length(ly$Z); mo <- vo <- numeric(Dout); st <- vector("list", Dout)
        for (d in 1:Dout) {
          q <- Q[[l]][[d]]; Z <- ly$Z[[d]]
          if (l == 1) {
            k <- as.vector(kmat(matrix(mu, 1), Z, ell2, sf2))
            mo[d] <- sum(k * q$Ah); vo[d] <- sf2 + sum(k * (q$Bh %*% k)) + sn2
            st[[d]] <- list(k = k)
          } else {
            p1 <- psi1f(mu, s, Z, ell2, sf2); P2 <- psi2f(mu, s, Z, ell2, sf2)
            mo[d] <- sum(p1 * q$Ah); vo[d] <- sn2 + sf2 + sum(q$Bh * P2) - mo[d]^2
            st[[d]] <- list(p1 = p1, P2 = P2)
          }
        }
        cache[[l]] <- list(mu = mu, s = s, m = mo, v = vo, st = st)
        mu <- mo; s <- vo
      }
      yn <- y[n, ]; sumlogZ <- sumlogZ + sum(-0.5 * log(2 * pi * s) - 0.5 * (yn - mu)^2 / s)
      if (!grad) next
      gm <- (yn - mu) / s; gv <- -0.5 / s + 0.5 * (yn - mu)^2 / s^2     # backward
      for (l in L:1) {
        ly <- par[[l]]; ell2 <- exp(2 * ly$lell); sf2 <- exp(2 * ly$lsf); cl <- cache[[l]]
        Din <- length(ly$lell); gmu <- numeric(Din); gs <- numeric(Din)
        for (d in seq_along(ly$Z)) {
          q <- Q[[l]][[d]]; Z <- ly$Z[[d]]; M <- nrow(Z); st <- cl$st[[d]]
          dir[[l]]$sf2 <- dir[[l]]$sf2 + gv[d]; dir[[l]]$sn2 <- dir[[l]]$sn2 + gv[d]
          if (l == 1) {
            k <- st$k
            Q[[l]][[d]]$GA <- Q[[l]][[d]]$GA + gm[d] * k
            Q[[l]][[d]]$GB <- Q[[l]][[d]]$GB + gv[d] * (k %*% t(k))
            gk <- gm[d] * as.vector(q$Ah) + 2 * gv[d] * as.vector(q$Bh %*% k)
            w <- gk * k; Dx <- t(cl$mu - t(Z))
            dir[[l]]$Z[[d]] <- dir[[l]]$Z[[d]] + w * Dx / matrix(ell2, M, Din, byrow = TRUE)
            dir[[l]]$ell2 <- dir[[l]]$ell2 + colSums(w * Dx^2 / matrix(2 * ell2^2, M, Din, byrow = TRUE))
            dir[[l]]$sf2 <- dir[[l]]$sf2 + sum(w) / sf2
          } else {
            gme <- gm[d] - 2 * gv[d] * cl$m[d]; p1 <- st$p1; P2 <- st$P2
            Q[[l]][[d]]$GA <- Q[[l]][[d]]$GA + gme * p1
            Q[[l]][[d]]$GB <- Q[[l]][[d]]$GB + gv[d] * P2
            w <- gme * as.vector(q$Ah) * p1; W <- gv[d] * q$Bh * P2
            mu0 <- cl$mu; s0 <- cl$s; a <- ell2 + s0; b <- ell2 + 2 * s0
            Dz <- t(t(Z) - mu0)
            gmu <- gmu + colSums(w * Dz / matrix(a, M, Din, byrow = TRUE))
            gs <- gs + colSums(w * (-0.5 / matrix(a, M, Din, byrow = TRUE) + 0.5 * Dz^2 / matrix(a^2, M, Din, byrow = TRUE)))
            gl <- colSums(w * (0.5 / matrix(ell2, M, Din, byrow = TRUE) - 0.5 / matrix(a, M, Din, byrow = TRUE) +
                                 0.5 * Dz^2 / matrix(a^2, M, Din, byrow = TRUE)))
            gz <- -w * Dz / matrix(a, M, Din, byrow = TRUE)
            for (j in 1:Din) {
              Zb <- outer(Z[, j], Z[, j], "+") / 2; Dd <- outer(Z[, j], Z[, j], "-")
              gmu[j] <- gmu[j] + sum(W * (-2 * (mu0[j] - Zb) / b[j]))
              gs[j] <- gs[j] + sum(W * (-1 / b[j] + 2 * (mu0[j] - Zb)^2 / b[j]^2))
              gl[j] <- gl[j] + sum(W * (0.5 / ell2[j] - 0.5 / b[j] + Dd^2 / (4 * ell2[j]^2) + (mu0[j] - Zb)^2 / b[j]^2))
              gz[, j] <- gz[, j] + 2 * rowSums(W * (-Dd / (2 * ell2[j]) + (mu0[j] - Zb) / b[j]))
            }
            dir[[l]]$ell2 <- dir[[l]]$ell2 + gl; dir[[l]]$Z[[d]] <- dir[[l]]$Z[[d]] + gz
            dir[[l]]$sf2 <- dir[[l]]$sf2 + sum(w) / sf2 + 2 * sum(W) / sf2
          }
        }
        gm <- gmu; gv <- gs
      }
    }
    sc <- N / B
    E <- E - sc * sumlogZ
    if (!grad) return(E)
    g <- par                                             # chain (section 3.6)
    for (l in 1:L) {
      ly <- par[[l]]; ell2 <- exp(2 * ly$lell); sf2 <- exp(2 * ly$lsf); sn2 <- exp(2 * ly$lsn)
      gell2 <- -sc * dir[[l]]$ell2; gsf2 <- -sc * dir[[l]]$sf2
      for (d in seq_along(ly$Z)) {
        q <- Q[[l]][[d]]; Z <- ly$Z[[d]]; M <- nrow(Z); Ki <- q$Ki; tau <- ly$tau[[d]]
        dSh <- Ki %*% q$GB %*% Ki
        dmh <- Ki %*% q$GA; if (l > 1) dmh <- dmh + 2 * dSh %*% q$mh
        dPh <- -q$Sh %*% (dSh + beta * dmh %*% t(tau)) %*% q$Sh
        dKi_lz <- dPh + q$GA %*% t(q$mh) + q$GB %*% Ki %*% q$C + q$C %*% Ki %*% q$GB - q$GB
        Spmm <- q$S + q$m %*% t(q$m); Shmm <- q$Sh + q$mh %*% t(q$mh)
        dLam <- -(N - 1) / 2 * Spmm + N * beta / 2 * Shmm - sc * beta * dPh
        dtau <- (N - 1) * q$m - N * beta * q$mh - sc * beta * q$Sh %*% dmh
        dKi <- -0.5 * q$K - (N - 1) / 2 * Spmm + N / 2 * Shmm - sc * dKi_lz
        dK <- -Ki %*% dKi %*% Ki; dK <- (dK + t(dK)) / 2
        K0 <- q$K - jit * diag(M)
        gell2 <- gell2 + sapply(1:ncol(Z), function(j) sum(dK * K0 * outer(Z[, j], Z[, j], "-")^2 / (2 * ell2[j]^2)))
        gsf2 <- gsf2 + sum(dK * K0) / sf2
        gZK <- sapply(1:ncol(Z), function(j) 2 * rowSums(dK * (-K0 * outer(Z[, j], Z[, j], "-") / ell2[j])))
        g[[l]]$Z[[d]] <- matrix(gZK, M) - sc * dir[[l]]$Z[[d]]
        R <- mkR(ly$rho[[d]], M); dR <- R %*% (dLam + t(dLam)); diag(dR) <- diag(dR) * diag(R)
        g[[l]]$rho[[d]] <- dR[upper.tri(dR, diag = TRUE)]
        g[[l]]$tau[[d]] <- as.vector(dtau)
      }
      g[[l]]$lell <- gell2 * 2 * ell2; g[[l]]$lsf <- gsf2 * 2 * sf2
      g[[l]]$lsn <- -sc * dir[[l]]$sn2 * 2 * sn2
    }
    list(E = E, grad = g)
  }

  dgp_energy
})

test_that("the C++ energy and gradient equal the reference implementation (2-2-2-1, M = 3, N = 7, batch 4)", {
  set.seed(3)
  Nn <- 7; dims <- c(2, 2, 2, 1); M <- 3
  X <- matrix(rnorm(Nn * dims[1]), Nn); y <- matrix(rnorm(Nn), Nn)
  par <- lapply(1:3, function(l) list(lell = rnorm(dims[l], 0.3, 0.2), lsf = rnorm(1, 0, 0.2), lsn = log(0.2),
    Z = lapply(1:dims[l + 1], function(d) matrix(rnorm(M * dims[l]), M)),
    rho = lapply(1:dims[l + 1], function(d) rnorm(M * (M + 1) / 2) / 3),
    tau = lapply(1:dims[l + 1], function(d) rnorm(M))))
  idx <- c(1, 3, 4, 6)
  ref <- dgp_reference(par, X, y, N = Nn, idx = idx, grad = TRUE)
  net <- list(jitter = 1e-6, layers = lapply(par, function(ly)
    list(log_ell = ly$lell, log_sf = ly$lsf, log_sn = ly$lsn, Z = ly$Z, rho = ly$rho, tau = ly$tau)))
  got <- scalegp:::.dgp_energy(net, X, y, as.integer(idx), Nn, 1L, numeric(0))
  expect_equal(got$energy, ref$E, tolerance = 1e-10)
  g <- got$gradient$layers
  for (l in 1:3) {
    expect_equal(g[[l]]$log_ell, ref$grad[[l]]$lell, tolerance = 1e-8)
    expect_equal(g[[l]]$log_sf, ref$grad[[l]]$lsf, tolerance = 1e-8)
    expect_equal(g[[l]]$log_sn, ref$grad[[l]]$lsn, tolerance = 1e-8)
    for (d in seq_along(par[[l]]$Z)) {
      expect_equal(g[[l]]$Z[[d]], ref$grad[[l]]$Z[[d]], tolerance = 1e-8)
      expect_equal(g[[l]]$rho[[d]], ref$grad[[l]]$rho[[d]], tolerance = 1e-8)
      expect_equal(g[[l]]$tau[[d]], ref$grad[[l]]$tau[[d]], tolerance = 1e-8)
    }
  }
  # the same energy on 2 threads, bit for bit
  expect_identical(scalegp:::.dgp_energy(net, X, y, as.integer(idx), Nn, 2L, numeric(0)), got)
})

dgp_data <- function(n = 150) {
  set.seed(2)
  d <- data.frame(x1 = runif(n, -2, 2), x2 = runif(n), g = factor(sample(c("a", "b"), n, TRUE)))
  d$y <- sign(d$x1) + 0.5 * d$x2 + 0.3 * (d$g == "b") + rnorm(n, sd = 0.1)
  d
}
quiet <- function(...) gp_control(verbose = FALSE, threads = 1, seed = 1, ...)

test_that("dgp() fits a step function and its methods run", {
  d <- dgp_data()
  fit <- dgp(y ~ x1 + x2 + g, data = d, inducing = 15, control = quiet(iterations = 800))
  expect_s3_class(fit, c("dgp", "scalegp"))
  expect_false(fit$converged)
  expect_false(fit$control$priors)
  expect_equal(fit$iterations, 800)
  expect_equal(fit$inputs, c("x1", "x2", "gb"))
  truth <- sign(d$x1) + 0.5 * d$x2 + 0.3 * (d$g == "b")
  expect_lt(sqrt(mean((fitted(fit) - truth)^2)), 0.25)
  expect_lt(sigma(fit), 0.4)
  ll <- logLik(fit)
  expect_true(attr(ll, "approximate"))
  expect_equal(as.numeric(ll), fit$objective)
  expect_true(is.finite(fit$objective))
  # the trace ends near the final objective (both on the data scale)
  expect_lt(abs(mean(tail(fit$trace, 100)) - fit$objective) / fit$n, 0.5)
  nd <- data.frame(x1 = c(-1, 1), x2 = 0.5, g = factor("a", levels = c("a", "b")))
  pl <- predict(fit, nd, se.fit = TRUE)
  pr <- predict(fit, nd, type = "response", se.fit = TRUE)
  # Gaussian: "link" and "response" are the latent output, as gpgam()'s; the forward pass's output
  # Gaussian (a new observation, on the network's scale) is that plus the noise, sigma(fit)^2
  expect_identical(pl, pr)
  net_out <- scalegp:::.dgp_predict(fit$net, scalegp:::dgp_inputs(fit, nd), fit$n, 1L)
  ys <- fit$scaling$y$scale
  L <- length(fit$net$layers)
  for (i in 1:2) expect_equal(unname(pl$se.fit[i])^2 + sigma(fit)^2, net_out$var[[L]][i, 1] * ys^2, tolerance = 1e-10)
  expect_true(all(sigma(fit)^2 > 1e-4 * net_out$var[[L]][, 1] * ys^2))  # far above the tolerance: the check sees the noise
  expect_equal(unname(pl$fit), c(-1, 1) + 0.25, tolerance = 0.3)
  h <- predict(fit, nd, layer = 1)
  expect_equal(dim(h$mean), c(2L, 2L))  # the default hidden layer has two units
  expect_true(all(h$var > 0))
  expect_equal(unname(predict(fit)), fitted(fit), tolerance = 1e-10)
  # named by newdata's row names, as predict.lm()
  expect_identical(names(predict(fit, d[c(5, 2), ])), rownames(d)[c(5, 2)])
  expect_identical(names(pl$se.fit), rownames(nd))
  expect_identical(rownames(h$mean), rownames(nd))
  expect_equal(unname(residuals(fit)), d$y - unname(fitted(fit)))
  expect_output(print(fit), "Deep Gaussian process")
  s <- summary(fit)
  expect_equal(nrow(s$layers), 2)
  expect_output(print(s), "Approximate log marginal likelihood")
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(fit))
  expect_silent(plot(fit, which = "fit", input = "x1"))
})

test_that("a dgp() fit is identical for 1 and 2 threads and reproducible by seed", {
  d <- dgp_data(300)
  f1 <- dgp(y ~ x1 + x2, data = d, hidden = c(2, 2), inducing = 5,
            control = gp_control(verbose = FALSE, threads = 1, seed = 4, iterations = 30, batch_size = 300))
  f2 <- dgp(y ~ x1 + x2, data = d, hidden = c(2, 2), inducing = 5,
            control = gp_control(verbose = FALSE, threads = 2, seed = 4, iterations = 30, batch_size = 300))
  expect_identical(f1$net, f2$net)
  expect_identical(f1$trace, f2$trace)
  expect_identical(f1$objective, f2$objective)
})

test_that("dgp() refuses bad input with errors naming the argument", {
  d <- dgp_data(60)
  expect_error(dgp(y ~ x1, data = d, hidden = c(2, 0), control = quiet()), "'hidden'")
  expect_error(dgp(y ~ x1, data = d, hidden = 1.5, control = quiet()), "'hidden'")
  expect_error(dgp(y ~ x1, data = d, hidden = 2, inducing = c(5, 5, 5), control = quiet()), "'inducing'")
  expect_error(dgp(y ~ x1, data = d, hidden = 2, inducing = c(5, 0), control = quiet()), "'inducing'")
  expect_error(dgp(y ~ x1, data = d, hidden = c(2, -1), control = quiet()), "'hidden'")
  expect_error(dgp(y ~ x1, data = d, inducing = 1, control = quiet()), "'inducing' must be at least 2")
  # more inducing points than rows: reduced to the rows with a warning, as gpgam() does
  expect_warning(f61 <- dgp(y ~ x1, data = d, inducing = 61, control = quiet(iterations = 2)),
                 "'inducing' = 61 in the first layer exceeds the 60 rows; using 60")
  expect_equal(f61$inducing[1], 60L)
  d$k <- 1
  expect_error(dgp(y ~ x1 + k, data = d, inducing = 5, control = quiet()), "'data'.*'k'")
  d$x1[3] <- NA
  expect_error(dgp(y ~ x1, data = d, inducing = 5, na.action = na.fail, control = quiet()), "missing")
  fit <- dgp(y ~ x1, data = d, inducing = 5, control = quiet(iterations = 5))
  expect_equal(fit$n, 59)
  # a missing input predicts NA, as predict.gpgam(); a missing variable is named
  pn <- predict(fit, data.frame(x1 = c(1, NA, 0.5)), se.fit = TRUE)
  expect_identical(unname(which(is.na(pn$fit))), 2L)
  expect_identical(unname(which(is.na(pn$se.fit))), 2L)
  expect_equal(unname(pn$fit[c(1, 3)]), unname(predict(fit, data.frame(x1 = c(1, 0.5)))), tolerance = 1e-14)
  expect_identical(names(pn$fit), c("1", "2", "3"))
  expect_true(all(is.na(predict(fit, data.frame(x1 = NA_real_)))))
  expect_error(predict(fit, data.frame(z = 1)), "'newdata' lacks the variable\\(s\\) 'x1'")
  # na.exclude: predictions at the fitting rows are padded with NA at the dropped row, as predict.lm() pads
  fe <- dgp(y ~ x1, data = d, inducing = 5, na.action = na.exclude, control = quiet(iterations = 5))
  pe <- predict(fe, se.fit = TRUE)
  expect_length(pe$fit, 60)
  expect_identical(unname(which(is.na(pe$fit))), 3L)
  expect_identical(unname(which(is.na(pe$se.fit))), 3L)
  expect_identical(names(pe$fit), rownames(d))
  expect_equal(pe$fit[-3], predict(fit), tolerance = 1e-12)
  expect_equal(pe$fit[-3], predict(fe, d[-3, ]), tolerance = 1e-12)
  expect_identical(nrow(predict(fe, layer = 1)$mean), 60L)
  expect_error(predict(fit, data.frame(x1 = 1), layer = 2), "'layer'")
  # arguments predict.dgp() does not take, and the methods a deep GP has not: errors that say so
  expect_error(predict(fit, data.frame(x1 = 1), interval = "prediction", level = 0.9), "'interval', 'level'.*se.fit")
  expect_error(predict(fit, data.frame(x1 = 1), bogus = 1), "'bogus'")
  expect_error(simulate(fit, 2), "simulate\\(\\) is not available for a dgp\\(\\) fit")
  expect_error(vcov(fit), "vcov\\(\\) is not available")
  expect_error(coef(fit), "coef\\(\\) is not available")
  expect_error(anova(fit), "anova\\(\\) is not available")
  expect_error(dgp(y ~ x1, data = d, family = poisson(), control = quiet()), "'family'")
  expect_error(dgp(y ~ x1, data = d, weights = c(0, rep(1, 59)), control = quiet()), "'weights'")
  expect_error(dgp(y ~ x1, data = d, weights = c(NA, rep(1, 59)), na.action = na.fail, control = quiet()), "missing|'weights'")
  # gp_control() settings that dgp() does not use are named in a warning, not ignored silently
  expect_warning(dgp(y ~ x1, data = d, inducing = 5, control = quiet(iterations = 2, tol = 1e-3)),
                 "does not use gp_control\\(tol = \\)")
  d$b <- as.numeric(d$y > 0)
  expect_warning(dgp(b ~ x1, data = d, inducing = 5, family = binomial(link = "probit"),
                     control = quiet(iterations = 2, fixed = "sigma", sigma = 0.1)),
                 "does not use gp_control\\(sigma = , fixed = \\).*no output noise")
  expect_error(dgp(y ~ x1, data = d, inducing = 5, control = quiet(hidden_noise = -1)), "'hidden_noise'")
  expect_error(dgp(y ~ x1, data = d, inducing = 5, control = quiet(scale_inputs = NA)), "'scale_inputs'")
  # an option of dgp() given to gpgam() is refused, naming its owner
  expect_error(gpgam(y ~ gp(x1), data = d, control = quiet(hidden_noise = 0.2)),
               "'hidden_noise' is an option of dgp\\(\\), not of inference = \"vi\"")
  expect_warning(dgp(y ~ x1, data = d, inducing = 5, control = quiet(iterations = 2, inducing = 10, posterior = "meanfield")),
                 "inducing = , posterior = .*dgp\\(inducing = \\)")
  expect_warning(dgp(y ~ x1, data = d, inducing = 5, control = quiet(iterations = 2, priors = FALSE)), NA)
  expect_warning(dgp(y ~ x1, data = d, inducing = 5, control = fit$control), NA)
})

test_that("dgp() with a probit output classifies and predicts probabilities", {
  set.seed(5)
  n <- 200
  d <- data.frame(x1 = runif(n, -2, 2), x2 = runif(n, -2, 2))
  d$cls <- factor(ifelse(d$x1 * d$x2 + rnorm(n, sd = 0.2) > 0, "pos", "neg"), levels = c("neg", "pos"))
  fit <- dgp(cls ~ x1 + x2, data = d, hidden = 2, inducing = 15, family = binomial(link = "probit"),
             control = quiet(iterations = 1500))
  expect_equal(fit$likelihood, "probit")
  L <- summary(fit)$layers
  expect_equal(nrow(L), 2L)
  expect_true(is.na(L$noise_sd[nrow(L)]))  # the probit output layer has no noise sd
  expect_true(is.finite(L$noise_sd[1]))
  expect_equal(sigma(fit), 1)
  p <- fitted(fit)
  expect_true(all(p > 0 & p < 1))
  expect_lt(mean((p > 0.5) != (d$cls == "pos")), 0.15)
  nd <- data.frame(x1 = c(1, -1, 1), x2 = c(1, 1, -1))
  pr <- predict(fit, nd, type = "response", se.fit = TRUE)
  expect_equal(unname(pr$fit > 0.5), c(TRUE, FALSE, FALSE))
  pl <- predict(fit, nd, se.fit = TRUE)
  expect_equal(pr$fit, pnorm(pl$fit / sqrt(1 + pl$se.fit^2)), tolerance = 1e-12)
  expect_equal(unname(residuals(fit, type = "response")), (d$cls == "pos") - unname(p))
  expect_error(dgp(x1 ~ x2, data = d, family = binomial(link = "probit"), control = quiet()), "'x1'")
})

test_that("dgp() with no hidden layer predicts with the FITC/sparse posterior of its factors, per-layer inducing counts", {
  d <- dgp_data(120)
  fit <- dgp(y ~ x1 + x2, data = d, hidden = 0, inducing = 8, control = quiet(iterations = 300))
  expect_equal(fit$hidden, integer(0))
  expect_equal(length(fit$net$layers), 1)
  expect_identical(dgp(y ~ x1 + x2, data = d, hidden = integer(0), inducing = 8, control = quiet(iterations = 300))$net,
                   fit$net)
  expect_error(plot(fit, which = "warping"), "'which'")
  # the predictive of one layer in closed form from the fitted factors:
  # q(u) = N(S tau, S), S = (K^-1 + R'R)^-1; f(x) ~ N(k' K^-1 m, kxx - k' K^-1 k + k' K^-1 S K^-1 k)
  ly <- fit$net$layers[[1]]
  Z <- ly$Z[[1]]; M <- nrow(Z)
  ell2 <- exp(2 * ly$log_ell); sf2 <- exp(2 * ly$log_sf)
  kern <- function(A, B) sf2 * exp(-0.5 * outer(seq_len(nrow(A)), seq_len(nrow(B)),
                                                 Vectorize(function(i, j) sum((A[i, ] - B[j, ])^2 / ell2))))
  K <- kern(Z, Z) + fit$net$jitter * diag(M)
  R <- matrix(0, M, M); R[upper.tri(R, diag = TRUE)] <- ly$rho[[1]]; diag(R) <- exp(diag(R))
  S <- solve(solve(K) + crossprod(R)); m <- S %*% ly$tau[[1]]
  nd <- data.frame(x1 = c(-1.5, 0.2, 1.1), x2 = c(0.3, -0.4, 0.9))
  Xs <- scale(as.matrix(nd), fit$scaling$x$center, fit$scaling$x$scale)
  Kx <- kern(Xs, Z); A <- Kx %*% solve(K)
  mu <- drop(A %*% m); v <- sf2 - rowSums(A * Kx) + rowSums((A %*% S) * A)
  p <- predict(fit, nd, se.fit = TRUE)
  ys <- fit$scaling$y$scale
  for (i in 1:3) {
    expect_equal(unname(p$fit[i]), mu[i] * ys + fit$scaling$y$center, tolerance = 1e-8)
    expect_equal(unname(p$se.fit[i]), sqrt(v[i]) * ys, tolerance = 1e-7)
  }
  # one inducing count per layer
  f2 <- dgp(y ~ x1 + x2, data = d, hidden = 2, inducing = c(10, 4), control = quiet(iterations = 20))
  expect_equal(vapply(f2$net$layers, function(l) nrow(l$Z[[1]]), 1), c(10, 4))
  expect_output(print(f2), "by layer: 10, 4")
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(f2, which = "warping"))
})

test_that("dgp() prior weights divide the output noise variance: energy identities and finite differences", {
  d <- dgp_data(40)
  fit <- dgp(y ~ x1 + x2, data = d, hidden = 2, inducing = 5, control = quiet(iterations = 50))
  X <- scale(as.matrix(d[, c("x1", "x2")]), fit$scaling$x$center, fit$scaling$x$scale)
  y <- matrix((d$y - fit$scaling$y$center) / fit$scaling$y$scale)
  idx <- c(3L, 7L, 11L, 20L)
  net <- fit$net
  L <- length(net$layers)
  e1 <- scalegp:::.dgp_energy(net, X, y, idx, 40, 1L, numeric(0))
  # weights all 2 equal the network with the output noise variance halved
  net2 <- net
  net2$layers[[L]]$log_sn <- net$layers[[L]]$log_sn - log(2) / 2
  e2 <- scalegp:::.dgp_energy(net, X, y, idx, 40, 1L, rep(2, 40))
  expect_equal(e2$energy, scalegp:::.dgp_energy(net2, X, y, idx, 40, 1L, numeric(0))$energy, tolerance = 1e-12)
  expect_equal(scalegp:::.dgp_energy(net, X, y, idx, 40, 1L, rep(1, 40))$energy, e1$energy, tolerance = 1e-14)
  # unequal weights: the analytic gradient in log_sn of both layers against central differences
  w <- seq(0.5, 2.5, length.out = 40)
  g <- scalegp:::.dgp_energy(net, X, y, idx, 40, 1L, w)$gradient
  for (l in 1:L) {
    h <- 1e-5
    np <- net; np$layers[[l]]$log_sn <- net$layers[[l]]$log_sn + h
    nm <- net; nm$layers[[l]]$log_sn <- net$layers[[l]]$log_sn - h
    fd <- (scalegp:::.dgp_energy(np, X, y, idx, 40, 1L, w)$energy - scalegp:::.dgp_energy(nm, X, y, idx, 40, 1L, w)$energy) / (2 * h)
    expect_equal(g$layers[[l]]$log_sn, fd, tolerance = 1e-6)
  }
  # a weighted fit runs and keeps its weights
  fw <- dgp(y ~ x1 + x2, data = d, weights = w, hidden = 2, inducing = 5, control = quiet(iterations = 50))
  expect_equal(unname(fw$prior.weights), w)
  expect_error(dgp(yb ~ x1, data = transform(d, yb = as.numeric(y > 0)), weights = w, family = binomial(link = "probit"),
                   control = quiet()), "'weights'")
})

test_that("gp_control(fixed =, sigma =) and dgp_options() act on a dgp() fit", {
  d <- dgp_data(80)
  fx <- c("kernel", "inducing", "sigma")
  f1 <- dgp(y ~ x1 + x2, data = d, inducing = 6, control = quiet(iterations = 1, fixed = fx, sigma = 0.3))
  f2 <- dgp(y ~ x1 + x2, data = d, inducing = 6, control = quiet(iterations = 150, fixed = fx, sigma = 0.3))
  free <- dgp(y ~ x1 + x2, data = d, inducing = 6, control = quiet(iterations = 150, sigma = 0.3))
  held <- function(f) lapply(f$net$layers, function(ly) list(ly$log_ell, ly$log_sf, ly$Z))
  # held parameters are where they started, whatever the number of steps ...
  expect_identical(held(f2), held(f1))
  expect_identical(f2$net$layers[[2]]$log_sn, f1$net$layers[[2]]$log_sn)
  # ... and those starts are the documented ones: output noise sd = sigma on
  # the data scale; later layers' lengthscales e and kernel sd 1; the first
  # layer's lengthscales the median pairwise distance (zero diagonal
  # included) of the standardised inputs
  expect_equal(sigma(f2), 0.3, tolerance = 1e-12)
  expect_equal(f2$net$layers[[2]]$log_ell, c(1, 1), tolerance = 1e-14)
  expect_identical(f2$net$layers[[1]]$log_sf, 0)
  Xs <- scale(as.matrix(d[c("x1", "x2")]))
  D <- as.matrix(dist(Xs))
  v <- sort(D[upper.tri(D, diag = TRUE)])
  expect_equal(f2$net$layers[[1]]$log_ell, rep(log(v[length(v) %/% 2 + 1]), 2), tolerance = 1e-12)
  # the rest is learned: the factors and the hidden layer's noise move, and
  # a free fit moves the held parameters
  expect_false(isTRUE(all.equal(f2$net$layers[[1]]$tau, f1$net$layers[[1]]$tau)))
  expect_false(isTRUE(all.equal(f2$net$layers[[1]]$log_sn, f1$net$layers[[1]]$log_sn)))
  expect_false(isTRUE(all.equal(held(free), held(f2))))
  expect_gt(abs(log(sigma(free) / 0.3)), 0.05)
  s <- capture.output(print(summary(f2)))
  expect_true(any(grepl("Held at their initial values: kernel parameters, inducing inputs, output noise", s)))
  # the hidden layers' starting noise; unscaled inputs: the first layer's
  # inducing inputs are k-means centres on the data's scale
  d$x2 <- 100 * d$x2
  f3 <- dgp(y ~ x1 + x2, data = d, inducing = 6,
            control = quiet(iterations = 1, fixed = "inducing", hidden_noise = 0.05, scale_inputs = FALSE))
  expect_equal(exp(f3$net$layers[[1]]$log_sn), 0.05, tolerance = 0.011)  # one Adam step of 0.01 on the log
  expect_equal(unname(c(f3$scaling$x$center, f3$scaling$x$scale)), c(0, 0, 1, 1))
  Z <- f3$net$layers[[1]]$Z[[1]]
  expect_true(all(Z[, 2] >= min(d$x2) & Z[, 2] <= max(d$x2)))
  expect_gt(diff(range(Z[, 2])), 10)
  expect_identical(f3$control$options$scale_inputs, FALSE)
  expect_identical(f3$control$options$hidden_noise, 0.05)
  expect_null(f3$control$hidden_noise)
  expect_equal(unname(predict(f3, d[1:3, ])), fitted(f3)[1:3], tolerance = 1e-10)
})

test_that("chunked_csv() returns a file in chunks and rewinds", {
  f <- tempfile(fileext = ".csv")
  on.exit(unlink(f))
  d <- data.frame(x = seq(0.5, 12.5, by = 0.5), g = rep(c("a", "b", "c"), length.out = 25))
  write.csv(d, f, row.names = FALSE)
  src <- chunked_csv(f, rows = 10)
  got <- list(src(), src(), src())
  expect_equal(vapply(got, nrow, 1), c(10, 10, 5))
  expect_null(src())
  expect_equal(do.call(rbind, got), read.csv(f), ignore_attr = TRUE)
  src(reset = TRUE)
  expect_equal(src(), read.csv(f)[1:10, ], ignore_attr = TRUE)
  src(reset = TRUE)  # (closes the file it had open)
  expect_error(chunked_csv(file.path(tempdir(), "no-such-file.csv")), "'file'")
  expect_error(chunked_csv(f, rows = 0), "'rows'")
  expect_error(chunked_csv(f, nrows = 3), "'nrows'")
})

test_that("dgp() on data in chunks: moments of all rows, the energy of all rows, the same fit from a file", {
  d <- dgp_data(230)
  d$g <- as.character(d$g)
  d$g[c(3, 200)] <- c("c", "c")  # a level that the first chunk lacks
  f <- tempfile(fileext = ".csv")
  on.exit(unlink(f))
  write.csv(d, f, row.names = FALSE)
  d <- read.csv(f)  # the values the file holds
  chunks <- split(d, rep(1:3, c(100, 100, 30)))
  k <- 0
  src <- function(reset = FALSE) {
    if (reset) k <<- 0 else if (k < length(chunks)) chunks[[k <<- k + 1]]
  }
  rng <- .Random.seed
  fc <- dgp(y ~ x1 + x2 + g, data = src, inducing = 8, control = quiet(iterations = 800, batch_size = 25))
  expect_identical(.Random.seed, rng)  # the reservoir sample does not move the user's generator
  expect_equal(fc$n, 230)
  expect_equal(fc$chunks, c(100L, 100L, 30L))
  expect_equal(fc$control$epochs, round(800 * 25 / 230))
  expect_equal(fc$iterations, fc$control$epochs * (4 + 4 + 2))
  X <- model.matrix(~ x1 + x2 + g, transform(d, g = factor(g)))[, -1]
  expect_equal(fc$scaling$x$center, colMeans(X), tolerance = 1e-12)
  expect_equal(fc$scaling$x$scale, apply(X, 2, sd), tolerance = 1e-12)
  expect_equal(fc$scaling$y$scale, sd(d$y), tolerance = 1e-12)
  expect_equal(fc$xlevels$g, c("a", "b", "c"))
  # the reported objective is the energy of all rows at once (the chunks'
  # row-weighted mean), on the data scale
  Xs <- sweep(sweep(X, 2, fc$scaling$x$center), 2, fc$scaling$x$scale, "/")
  ys <- (d$y - fc$scaling$y$center) / fc$scaling$y$scale
  E <- scalegp:::.dgp_energy(fc$net, Xs, matrix(ys), seq_len(230), 230, 1L, numeric(0))$energy
  expect_equal(fc$objective, -E - 230 * log(sd(d$y)), tolerance = 1e-10)
  # it learns as well as the same fit in memory (test RMSE; sd(y) is 1.05)
  fm <- dgp(y ~ x1 + x2 + g, data = d, inducing = 8, control = quiet(iterations = 800, batch_size = 25))
  nd <- dgp_data(300)
  rmse <- function(f) sqrt(mean((predict(f, nd) - nd$y)^2))
  expect_lt(rmse(fc), 0.35)
  expect_lt(rmse(fc), 1.1 * rmse(fm))
  expect_true(is.finite(predict(fc, data.frame(x1 = 1, x2 = 0.5, g = "c"))))
  # the same chunks from a CSV file give the same fit; threads do not matter
  ff <- dgp(y ~ x1 + x2 + g, data = chunked_csv(f, rows = 100), inducing = 8,
            control = gp_control(verbose = FALSE, threads = 2, seed = 1, iterations = 800, batch_size = 25))
  expect_identical(ff$net, fc$net)
  expect_identical(ff$trace, fc$trace)
  # no data kept: fitted values, residuals and the fit plot say so
  expect_error(fitted(fc), "keeps no fitted values.*predict")
  expect_error(residuals(fc), "keeps no fitted values")
  expect_error(plot(fc, which = "fit"), "'x'.*read in chunks")
  expect_error(predict(fc), "'newdata'.*read in chunks")
  # refusals
  expect_error(dgp(y ~ x1, data = src, weights = x2, control = quiet()), "'weights'")
  expect_error(dgp(y ~ x1 + zz, data = src, control = quiet()), "'data'.*'zz'")
  expect_error(dgp(y ~ x1, data = function(reset = FALSE) if (!reset) 1:3, control = quiet()), "'data'.*data frame")
})

test_that("dgp() on chunks with a probit output and a factor response", {
  set.seed(6)
  d <- data.frame(x1 = runif(300, -2, 2))
  d$cls <- ifelse(d$x1 + rnorm(300, sd = 0.3) > 0, "pos", "neg")
  d$cls[1:100] <- "neg"; d$x1[1:100] <- -abs(d$x1[1:100])  # the first chunk has one class only
  chunks <- split(d, rep(1:3, each = 100))
  k <- 0
  src <- function(reset = FALSE) if (reset) k <<- 0 else if (k < 3) chunks[[k <<- k + 1]]
  fit <- dgp(cls ~ x1, data = src, inducing = 6, family = binomial(link = "probit"),
             control = quiet(iterations = 300))
  expect_equal(fit$ylevels, c("neg", "pos"))
  p <- predict(fit, data.frame(x1 = c(-1.5, 1.5)), type = "response")
  expect_lt(p[1], 0.2)
  expect_gt(p[2], 0.8)
})

test_that("dgp() on chunks: a chunk that na.action empties is skipped; a factor keeps its level order", {
  d <- dgp_data(120)
  d$g <- factor(as.character(d$g), levels = c("b", "a"))
  chunks <- split(d, rep(1:3, each = 40))
  chunks[[2]]$x1 <- NA
  k <- 0
  src <- function(reset = FALSE) if (reset) k <<- 0 else if (k < 3) chunks[[k <<- k + 1]]
  fit <- dgp(y ~ x1 + g, data = src, inducing = 5, control = quiet(iterations = 40, batch_size = 20))
  expect_equal(fit$n, 80)
  expect_equal(fit$chunks, c(40L, 0L, 40L))
  expect_equal(fit$iterations, fit$control$epochs * 4)
  expect_equal(fit$xlevels$g, c("b", "a"))
  expect_equal(fit$inputs, c("x1", "ga"))
  expect_true(is.finite(fit$objective))
})
