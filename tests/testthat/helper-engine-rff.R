# A test-only engine that is not an inducing-point model: Bayesian linear
# regression on a fixed set of random Fourier features (Rahimi and Recht
# 2007) at the fixed initial hyperparameters of the setup, with its Gaussian
# posterior over the weights in closed form.  It proves the engine contract
# (R/engine.R): registered with register_engine() from here, it implements
# every posterior generic and touches no shared file of the package.
#
# Model (internal scale of the setup): each gp() component c has D features
# phi_c(x) = sqrt(2 sigma_c^2 / D) cos(Omega_c (x / ell_c) + b_c), Omega_c
# with N(0, I) rows and b_c uniform on [0, 2 pi) (an SE kernel of variance
# sigma_c^2 and lengthscales ell_c, whatever the component's kind); the
# parametric block has the columns X_p diag(prior_sd).  Every weight has
# prior N(0, 1); y - offset = Phi v + e, e ~ N(0, noise / w).

rff_engine <- function() {
  scalegp:::new_engine("rff", label = "random Fourier features (test engine)", objective = "log marginal likelihood",
                       objective_note = "exact for the feature model", options = function(features = 50) {
                         list(features = features)
                       }, basis = "random features", basis_column = "features")
}

# The feature matrix of the whole model at internal design rows X (columns:
# the components' blocks in order) and the blocks.
rff_design <- function(st, X) {
  cols <- list()
  for (i in seq_along(st$specs)) {
    s <- st$specs[[i]]
    Xi <- X[, s$cols + 1L, drop = FALSE]
    if (s$kind == "linear") {
      cols[[i]] <- sweep(Xi, 2, s$prior_sd, "*")
    } else {
      ls <- rep(exp(s$log_ls), length.out = ncol(Xi))
      D <- nrow(st$omega[[i]])
      arg <- sweep(Xi, 2, ls, "/") %*% t(st$omega[[i]])
      cols[[i]] <- sqrt(2 * exp(s$log_var) / D) * cos(sweep(arg, 2, st$phase[[i]], "+"))
    }
  }
  do.call(cbind, cols)
}

rff_blocks <- function(st) {
  sz <- vapply(seq_along(st$specs), function(i)
    if (st$specs[[i]]$kind == "linear") length(st$specs[[i]]$cols) else nrow(st$omega[[i]]), 1L)
  Map(function(start, size) start + seq_len(size), cumsum(sz) - sz, sz)
}

rff_methods <- list(
  engine_fit.engine_rff = function(engine, setup, control) {
    D <- control$options$features
    set.seed(control$seed)
    st <- list(specs = setup$comps, omega = list(), phase = list(), log_noise = setup$log_noise)
    for (i in seq_along(st$specs)) {
      s <- st$specs[[i]]
      if (s$kind %in% c("factor")) stop("the rff test engine has no random effects")
      if (s$kind == "linear") next
      st$omega[[i]] <- matrix(stats::rnorm(D * length(s$cols)), D)
      st$phase[[i]] <- stats::runif(D, 0, 2 * pi)
    }
    Phi <- rff_design(st, setup$X)
    noise <- exp(setup$log_noise)
    r <- setup$y - setup$offset
    A <- crossprod(Phi, Phi * setup$w) / noise + diag(ncol(Phi))
    cov <- chol2inv(chol(A))
    mean <- drop(cov %*% crossprod(Phi, setup$w * r)) / noise
    C <- Phi %*% t(Phi) + diag(noise / setup$w, length(r))
    L <- chol(C)
    a <- backsolve(L, r, transpose = TRUE)
    objective <- -0.5 * (sum(a^2) + 2 * sum(log(diag(L))) + length(r) * log(2 * pi))
    c(st, list(mean = mean, cov = cov, objective = objective, trace = objective, iterations = 0L,
               converged = TRUE, stop = "closed form", gradient = numeric(), failures = 0L,
               seconds = c(init = 0, iterations = 0, final = 0)))
  },
  posterior_state.gpgam_rff = function(fit, res) {
    res[c("specs", "omega", "phase", "log_noise", "mean", "cov")]
  },
  term_basis.gpgam_rff = function(fit) {
    lapply(seq_along(fit$terms$gp), function(i) list(size = nrow(fit$state$omega[[i]]), inducing = NULL))
  },
  component_edf.gpgam_rff = function(fit) {
    vapply(rff_blocks(fit$state), function(idx) length(idx) - sum(diag(fit$state$cov)[idx]), 0)
  },
  centre_terms.gpgam_rff = function(fit, setup, res) {
    bl <- rff_blocks(fit$state)
    Phi <- rff_design(fit$state, setup$X)
    ctr <- numeric(ncol(Phi))
    for (i in which(scalegp:::centre_mask(fit))) ctr[bl[[i]]] <- colMeans(Phi[, bl[[i]], drop = FALSE])
    fit$state$center <- ctr
    fit
  },
  param_posterior.gpgam_rff = function(fit, ...) {
    st <- fit$state
    k <- length(st$specs)
    if (is.null(fit$terms$param)) return(list(coef = numeric(), vcov = matrix(0, 0, 0)))
    bl <- rff_blocks(st)
    ysc <- fit$scaling$y
    A <- fit$terms$param_scaling$A * ysc$scale
    L <- matrix(0, nrow(A), length(st$mean))
    L[, bl[[k]]] <- A %*% diag(st$specs[[k]]$prior_sd, length(bl[[k]]))
    if (fit$intercept) L[1, ] <- L[1, ] + ysc$scale * st$center
    b <- drop(L %*% st$mean)
    if (fit$intercept) b[1] <- b[1] + ysc$center
    V <- L %*% st$cov %*% t(L)
    names(b) <- rownames(A)
    dimnames(V) <- list(names(b), names(b))
    list(coef = b, vcov = V)
  },
  latent_predict.gpgam_rff = function(fit, X, offset, terms = FALSE, se = TRUE) {
    st <- fit$state
    Phi <- rff_design(st, X)
    ysc <- fit$scaling$y
    out <- list(fit = ysc$center + ysc$scale * drop(Phi %*% st$mean) + offset,
                se = ysc$scale * sqrt(pmax(rowSums((Phi %*% st$cov) * Phi), 0)))
    if (terms) {
      bl <- rff_blocks(st)[seq_along(fit$terms$gp)]
      out$term_fit <- sapply(bl, function(idx) {
        ysc$scale * drop(sweep(Phi[, idx, drop = FALSE], 2, st$center[idx]) %*% st$mean[idx])
      })
      out$term_se <- sapply(bl, function(idx) {
        P <- sweep(Phi[, idx, drop = FALSE], 2, st$center[idx])
        ysc$scale * sqrt(pmax(rowSums((P %*% st$cov[idx, idx, drop = FALSE]) * P), 0))
      })
      dim(out$term_fit) <- dim(out$term_se) <- c(nrow(X), length(bl))
    }
    out
  },
  fitted_latent.gpgam_rff = function(fit, setup, res) {
    scalegp:::latent_predict(fit, setup$X, setup$offset_raw)
  },
  term_projection.gpgam_rff = function(fit, X, ...) {
    st <- fit$state
    Phi <- rff_design(st, X)
    lapply(rff_blocks(st)[seq_along(fit$terms$gp)], function(idx) {
      qx <- qr(sweep(Phi[, idx, drop = FALSE], 2, st$center[idx]))
      R <- qr.R(qx)[, order(qx$pivot), drop = FALSE]
      list(mean = drop(R %*% st$mean[idx]), cov = R %*% st$cov[idx, idx] %*% t(R))
    })
  },
  latent_draws.gpgam_rff = function(fit, X, nsim) {
    st <- fit$state
    V <- st$mean + t(chol(st$cov)) %*% matrix(stats::rnorm(length(st$mean) * nsim), ncol = nsim)
    rff_design(st, X) %*% V
  },
  parameter_names.gpgam_rff = function(fit, n, ...) character(n)
)

# (test-engine-contract.R registers it, and removes it at its end so that
# other tests see only the package's engines)
