# The posterior contract (R/engine.R) for engines whose posterior is a
# Gaussian q(v) = N(m, S) over the whitened inducing variables v of all
# components (inference = "vi", "ep", "decoupled"): every gp() term is
# f_c(x) = phi_c(x)' v_c with phi_c(x) = K_c(x, Z_c) L_c^{-T}, the parametric
# block is v_p scaled by its prior sd.  The fit stores specs (components with
# their inducing inputs Z), m, S, the precision form P, h of the core, and
# the centring phibar.  These are the methods for class "gpgam"; an engine
# with another posterior implements every generic of the contract itself.

# Indices of the components' blocks in q (engine order: gp() terms, then the
# parametric block), one vector per component.
component_blocks <- function(fit) {
  sz <- vapply(fit$state$specs, function(s) switch(s$kind, factor = as.integer(s$levels), linear = length(s$cols),
                                                   hilbert = as.integer(prod(s$hs_m)), nrow(s$Z)), 1L)
  Map(function(start, size) start + seq_len(size), cumsum(sz) - sz, sz)
}

# The posterior as kept in a fit, from the engine's raw result.
posterior_state.gpgam <- function(fit, res) {
  list(specs = res$specs, log_noise = res$log_noise %||% 0, log_df = res$log_df, P = res$state$P, h = res$state$h, m = res$m, S = res$S)
}

# Per gp() term: its inducing points (the basis of its posterior) on the data
# scale; the size of its basis (a Hilbert basis has no inducing points).
term_basis.gpgam <- function(fit) {
  lapply(seq_along(fit$terms$gp), function(i) {
    s <- fit$state$specs[[i]]
    g <- fit$terms$gp[[i]]
    if (g$type == "factor") return(list(size = as.integer(s$levels), inducing = NULL))
    if (s$kind == "hilbert") return(list(size = as.integer(prod(s$hs_m)), inducing = NULL))
    Z <- sweep(sweep(s$Z, 2, g$scaling$scale, "*"), 2, g$scaling$center, "+")
    colnames(Z) <- g$spec$vars
    list(size = nrow(Z), inducing = Z)
  })
}

# Effective degrees of freedom per component: tr(I - S_cc) in whitened
# coordinates (Adam, Durrande and John 2018: tr(B_c' K_c B_c A^{-1}); their sum is tr(I - S)).
component_edf.gpgam <- function(fit) {
  vapply(component_blocks(fit), function(idx) length(idx) - sum(diag(fit$state$S)[idx]), 0)
}

# Identifiable gp() terms, as mgcv constrains every smooth: a term is
# reported centred over the data, f_c(x) - mean_i f_c(x_i), and the intercept
# carries the means.  Both are linear in v: the term's features are
# phi_c(x) - phibar_c.  A factor-`by` curve f_l(x) 1[g = l] is centred as
# mgcv centres it, f_l(x) - mean_i f_l(x_i) over all rows (the curve itself
# at every row's input, not only at its level's rows), so that the factor's
# coefficients compare the levels averaged over the whole data (not at each
# level's own inputs, where a chance imbalance of the inputs across levels
# would show up as a level effect).  Stores phibar in fit$state$center (zero
# for the terms that centre_mask() leaves uncentred and for the parametric
# block); the fitted predictor is unchanged.  The feature means over the data
# come with the engine's result when it has them (a discretised fit), else
# by a pass over the rows; those of the factor-`by` curves by a pass over
# the rows without their indicator.
centre_terms.gpgam <- function(fit, setup, res) {
  blocks <- component_blocks(fit)
  ctr <- numeric(sum(lengths(blocks)))
  keep <- centre_mask(fit)
  level <- vapply(fit$terms$gp, function(g) !is.null(g$by) && g$by$type == "level", TRUE)
  specs <- fit$state$specs
  plain <- which(keep & !level)
  if (length(plain)) {
    means <- res$feature_means %||%
      .gp_feature_means(specs, setup$X, fit$control$jitter, fit$control$threads)
    for (i in plain) ctr[blocks[[i]]] <- means[blocks[[i]]]
  }
  curves <- which(keep & level)
  if (length(curves)) {
    means <- .gp_feature_means(lapply(specs[curves], function(s) { s$by_col <- NULL; s }), setup$X,
                               fit$control$jitter, fit$control$threads)
    ctr[unlist(blocks[curves])] <- means
  }
  fit$state$center <- ctr
  fit
}

# Posterior mean and covariance of the parametric coefficients (data scale):
# linear functions L v of the inducing variables (the intercept includes the
# data means of the centred terms, see centre_terms()), plus `shift` (the
# internal-scale data average of a part of the mean outside q, which a
# centred term hands to the intercept).
param_posterior.gpgam <- function(fit, shift = 0) {
  pm <- param_map(fit, shift)
  if (is.null(pm)) return(list(coef = numeric(), vcov = matrix(0, 0, 0)))
  b <- drop(pm$L %*% fit$state$m) + pm$const
  V <- pm$L %*% fit$state$S %*% t(pm$L)
  names(b) <- rownames(pm$L)
  dimnames(V) <- list(names(b), names(b))
  list(coef = b, vcov = V)
}

# The parametric coefficients (data scale) as L v + const (NULL without a
# parametric block); param_posterior() and weight_posterior() read it.
param_map <- function(fit, shift = 0) {
  if (is.null(fit$terms$param)) return(NULL)
  k <- length(fit$state$specs)
  sp <- fit$state$specs[[k]]
  idx <- component_blocks(fit)[[k]]
  ysc <- fit$scaling$y
  A <- fit$terms$param_scaling$A * ysc$scale
  L <- matrix(0, nrow(A), length(fit$state$m), dimnames = list(rownames(A), NULL))
  L[, idx] <- A %*% diag(sp$prior_sd, length(idx))
  ctr <- fit$state$center
  if (!is.null(ctr) && any(ctr != 0)) {
    blocks <- component_blocks(fit)
    carriers <- level_carriers(fit)
    levels_c <- which(!vapply(carriers, is.null, TRUE))
    plain <- ctr
    for (i in levels_c) plain[blocks[[i]]] <- 0
    # (the centred terms' means to the intercept; without one only factor-by curves are centred, centre_mask())
    if (fit$intercept) L[1, ] <- L[1, ] + ysc$scale * plain
    # a level's constant goes to the intercept and the factor's coefficients
    # as its column of [1, C]^{-1} says (level_carriers())
    for (i in levels_c) {
      cr <- carriers[[i]]
      L[cr$rows, blocks[[i]]] <- L[cr$rows, blocks[[i]]] + ysc$scale * outer(cr$weights, ctr[blocks[[i]]])
    }
  }
  const <- numeric(nrow(L))
  if (fit$intercept) const[1] <- ysc$center + ysc$scale * shift
  list(L = L, const = const)
}

# The weights of predict(type = "lpmatrix") (data scale): the parametric
# coefficients (L v + const, as param_posterior()) and, per gp() term, its
# whitened inducing variables times the response scale, s v_c, with their
# joint posterior.  At internal design rows X the term's columns are its
# whitened features centred as predict() centres the term, phi_c(x) -
# phibar_c (centre_terms()), so that with the parametric model matrix the
# columns times the weights are the link prediction without the offset; the
# part of the latent variance that the inducing points leave at each row
# (the prior's k(x, x) - phi(x)'phi(x), data scale) is `resid`.  `shift`:
# as in param_posterior().  With `by_term`, also the gp() term of each
# column (`basis_term`) and each term's part of `resid` (`resid_terms`, a
# column per term), for predict(exclude = ).  An engine that keeps another
# posterior (its own posterior_state()) and has no weight_posterior() method
# is refused.
weight_posterior.gpgam <- function(fit, X = NULL, shift = 0, by_term = FALSE, ...) {
  if (!whitened_posterior(fit)) refuse_weights(fit)
  st <- fit$state
  s <- fit$scaling$y$scale
  blocks <- component_blocks(fit)[seq_along(fit$terms$gp)]
  gp <- as.integer(unlist(blocks))
  labs <- as.character(unlist(Map(function(g, b) paste0(g$spec$label, ".", seq_along(b)), fit$terms$gp, blocks)))
  # (the parametric block exactly as param_posterior() gives it; its covariance with the terms' weights)
  pp <- param_posterior.gpgam(fit, shift)
  pm <- param_map(fit, shift)
  cross <- if (is.null(pm)) matrix(0, 0, length(gp)) else s * (pm$L %*% st$S[, gp, drop = FALSE])
  V <- rbind(cbind(pp$vcov, cross), cbind(t(cross), s^2 * st$S[gp, gp, drop = FALSE]))
  b <- c(pp$coef, stats::setNames(s * st$m[gp], labs))
  dimnames(V) <- list(names(b), names(b))
  out <- list(coef = b, vcov = V)
  if (!is.null(X)) {
    f <- .gp_features(st$specs, X, fit$control$jitter, st$center)
    out$basis <- f$Phi[, gp, drop = FALSE]
    dimnames(out$basis) <- list(NULL, labs)
    out$resid <- s^2 * f$resid
    if (by_term) {
      out$basis_term <- rep(seq_along(blocks), lengths(blocks))
      # (a matrix of one row per row of X even for one row, where vapply() drops)
      out$resid_terms <- s^2 * matrix(vapply(seq_along(blocks), function(i)
        .gp_features(st$specs[i], X, fit$control$jitter, st$center[blocks[[i]]])$resid, numeric(nrow(X))),
        nrow(X), length(blocks))
    }
  }
  out
}

# Whether the fit's posterior is the whitened Gaussian of this file: no class
# of the fit before "gpgam" has a posterior_state() method of its own.
whitened_posterior <- function(fit) {
  for (cl in class(fit)) {
    if (cl == "gpgam") return(TRUE)
    if (!is.null(utils::getS3method("posterior_state", cl, optional = TRUE, envir = asNamespace("scalegp"))))
      return(FALSE)
  }
  FALSE
}

# Latent predictor (link scale, data scale) for an internal design.
latent_predict.gpgam <- function(fit, X, offset, terms = FALSE, se = TRUE) {
  st <- fit$state
  r <- .gp_predict(st$specs, list(P = st$P, h = st$h), X, offset / fit$scaling$y$scale, terms,
                   fit$control$jitter, fit$control$threads, if (terms && any(st$center != 0)) st$center,
                   variance = se || terms)
  ysc <- fit$scaling$y
  out <- list(fit = unscale_mean(ysc, r$mean), se = unscale_sd(ysc, r$var))
  if (terms) {
    out$term_fit <- ysc$scale * r$term_mean
    out$term_se <- unscale_sd(ysc, r$term_var)
  }
  out
}

# The linear predictor at the data from the engine's result (row_fit, the
# rows' latent predictor with the user's offset on the internal scale, or,
# from a discretised fit, row_mean), else by latent_predict().  A discretised
# fit returns the latent predictor of each row: from its values when no input
# was rounded (the same numbers, sums over distinct values), else the mean at
# its own inputs (terms over one or two rounded inputs interpolated from their
# rounding grid, Svgp::row_means_at_inputs(): the rounded inputs themselves
# put the fitted values of gp(x3, x4) on a 100 x 100 grid 0.5 posterior sd off
# on average) and the variance at its rounded values (internal scale, with
# the internal offset); other fits predict at the rows.
fitted_latent.gpgam <- function(fit, setup, res) {
  ysc <- fit$scaling$y
  if (!is.null(res$row_fit))  # (from the engine's result, as latent_predict() computes it)
    return(list(fit = unscale_mean(ysc, res$row_fit), se = unscale_sd(ysc, res$row_fit_var)))
  if (is.null(res$row_mean))
    return(latent_predict(fit, setup$X, setup$offset_raw, se = fit$likelihood != "gaussian"))
  list(fit = to_data_scale(setup, res$row_mean, setup$offset),
       se = if (!is.null(res$row_var)) unscale_sd(ysc, res$row_var) else numeric(length(res$row_mean)))
}

# Per gp() term at internal design rows X: its centred posterior mean f and
# covariance V at the rows, projected on an orthonormal basis Q of the span of
# its features Phi_c = Q R: Q'f = R m_c (+ Q' e, with `extra[[c]]` a part e
# of the term's mean outside q), Q'VQ = R S_cc R'.  Also null_cov, the
# covariance of Q'f over repeated data at the fitted hyperparameters when
# the term is zero: with the prior N(0, I) of v and the likelihood's
# curvature H = S^{-1} - I (q's precision less the prior's), m = S (score)
# has covariance S H S = S - S S, so null_cov = R (S_cc - S_c. S_.c) R'
# (exact for a Gaussian likelihood; at q's curvature otherwise).  None when a
# part of the mean lies outside q (`extra`), or with `null_cov = FALSE`.
term_projection.gpgam <- function(fit, X, extra = NULL, null_cov = TRUE) {
  feats <- .gp_features(fit$state$specs, X, fit$control$jitter, fit$state$center)
  blocks <- component_blocks(fit)
  S <- fit$state$S
  lapply(seq_along(fit$terms$gp), function(i) {
    idx <- blocks[[i]]
    qx <- qr(feats$Phi[, idx, drop = FALSE], LAPACK = TRUE)
    R <- qr.R(qx)[, order(qx$pivot), drop = FALSE]
    b <- drop(R %*% fit$state$m[idx])
    if (!is.null(extra[[i]])) b <- b + drop(crossprod(qr.Q(qx), extra[[i]]))
    Scc <- S[idx, idx, drop = FALSE]
    C <- if (null_cov && is.null(extra[[i]])) R %*% (Scc - tcrossprod(S[idx, , drop = FALSE])) %*% t(R)
    list(mean = b, cov = R %*% Scc %*% t(R), null_cov = C)
  })
}

# nsim draws of the latent predictor (internal scale, without offset) at
# internal design rows X: v from q plus the independent prior variance the
# inducing points leave at each row.  Draws of v first, then per block of
# rows the row noise (the order of R's random numbers is part of the result).
latent_draws.gpgam <- function(fit, X, nsim) {
  st <- fit$state
  Mt <- length(st$m)
  V <- st$m + t(chol(st$S)) %*% matrix(stats::rnorm(Mt * nsim), Mt, nsim)  # draws of v (Mt x nsim)
  n <- nrow(X)
  eta <- matrix(0, n, nsim)
  for (rows in split(seq_len(n), ceiling(seq_len(n) / 1e5))) {
    f <- .gp_features(st$specs, X[rows, , drop = FALSE], fit$control$jitter)
    eta[rows, ] <- f$Phi %*% V + sqrt(pmax(f$resid, 0)) * matrix(stats::rnorm(length(rows) * nsim), length(rows))
  }
  eta
}

# Names of the packed parameters the engines move (the layout of
# AdditiveModel::pack_hyper() and the likelihood's own parameter last): per component its
# log variance and log lengthscales (when learned), then its inducing
# coordinates (when learned).
parameter_names.gpgam <- function(fit, n, learn_z = !("inducing" %in% fit$control$fixed)) {
  out <- character()
  for (i in seq_along(fit$state$specs)) {
    s <- fit$state$specs[[i]]
    if (s$kind == "linear") next
    lab <- fit$terms$gp[[i]]$spec$label
    if (isTRUE(s$learn_kernel)) out <- c(out, kernel_parameter_names(fit, i))
    if (!s$kind %in% c("factor", "hilbert") && learn_z)
      out <- c(out, paste0(lab, ": inducing input ", rep(seq_len(nrow(s$Z)), ncol(s$Z)), ",",
                           rep(seq_len(ncol(s$Z)), each = nrow(s$Z))))
  }
  lik <- if (fit$likelihood == "scat") scat_param_names(fit) else lik_param_label(fit$likelihood) %||% "log noise variance"
  if (length(out) < n) out <- c(out, utils::head(lik, n - length(out)))
  # (a fit that stopped moving the inducing inputs reports the gradient without them)
  if (length(out) != n) out <- if (learn_z) parameter_names(fit, n, FALSE) else paste0("parameter ", seq_len(n))
  out
}
