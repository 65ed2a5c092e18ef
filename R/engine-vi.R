# The variational engine: calls the C++ core and turns its result (or the EP
# engine's) into the fit object shared by all engines.

engine_control <- function(control, problem) {
  list(jitter = control$jitter, batch_size = control$batch_size, iterations = control$iterations,
       learning_rate = control$learning_rate, tol = control$tol, patience = control$patience,
       natgrad_step = control$natgrad_step %||% -1,
       learn_inducing = !("inducing" %in% control$fixed),
       learn_noise = !("sigma" %in% control$fixed), gh_points = control$gh_points,
       meanfield = control$posterior == "meanfield", rank = as.integer(control$rank %||% 0L),
       damping = control$damping %||% -1, tied = identical(control$sites, "tied"))
}

# Progress bar (with verbose = TRUE) showing the objective, named `label`.
progress_monitor <- function(control, label, shift = 0) {
  if (!isTRUE(control$verbose)) return(function(it, obj) TRUE)
  env <- environment()
  value <- NA_real_
  cli::cli_progress_bar("Fitting", total = control$iterations, .envir = env,
                        format = paste0("{cli::pb_spin} iteration {cli::pb_current}/{cli::pb_total} | ", label,
                                        " {format(value, digits = 6)} | {cli::pb_elapsed}"))
  function(it, obj) {
    if (it %% 10 == 0) {
      value <<- obj - shift
      cli::cli_progress_update(set = it, .envir = env)
    }
    TRUE
  }
}

run_vi <- function(problem, control) {
  .svgp_fit(problem$X, problem$y, problem$w, problem$offset, problem$comps, problem$lik,
            problem$log_noise, engine_control(control, problem), control$threads, control$seed,
            progress_monitor(control, "ELBO", jacobian(problem)))
}

# Log-Jacobian of the response standardisation: ELBO(y) = ELBO(y_std) - this.
jacobian <- function(problem) problem$n * log(problem$yscaling$scale)

# `engine` is "vi" (objective: the ELBO) or "ep" (the EP log evidence).
collect_fit <- function(problem, res, control, engine = "vi") {
  jac <- jacobian(problem)
  state <- list(specs = res$specs, log_noise = res$log_noise %||% 0, P = res$state$P, h = res$state$h,
                m = res$m, S = res$S, engine = engine_control(control, problem))
  fit <- list(
    terms = problem$terms, scaling = list(y = problem$yscaling), family = problem$family,
    likelihood = problem$lik, engine = engine, state = state,
    trace = res$trace - jac, iterations = res$iterations, converged = res$converged,
    control = control, n = problem$n,
    intercept = problem$intercept, y = problem$y_raw, ylevels = problem$ylevels, prior.weights = problem$w_raw,
    offset = problem$offset_raw)
  if (engine == "vi") {
    fit$elbo <- res$elbo - jac
    fit$kl <- res$kl
    fit$rank_loss <- res$rank_loss
  } else {
    fit$evidence <- res$evidence
    fit$failures <- res$failures
  }
  fit$control$distributed <- if (!is.null(control$cluster)) length(control$cluster)
  fit$control$cluster <- NULL  # connections; not part of the result
  class(fit) <- c(paste0("gpgam_", engine), "gpgam", "scalegp")
  fit$params <- natural_params(fit)
  lp <- latent_predict(fit, problem$X, problem$offset)
  fit$linear.predictors <- lp$fit
  fit$fitted.values <- response_moments(fit, lp$fit, lp$se)$mean
  fit
}

# Hyperparameters on the scale of the data.
natural_params <- function(fit) {
  ysc <- fit$scaling$y$scale
  edf <- component_edf(fit)
  gp <- lapply(seq_along(fit$terms$gp), function(i) {
    s <- fit$state$specs[[i]]
    g <- fit$terms$gp[[i]]
    out <- list(label = g$spec$label, type = g$type, variance = exp(s$log_var) * ysc^2, edf = edf[i])
    if (g$type == "factor") {
      return(c(out, list(kernel = "iid", lengthscale = numeric(), inducing = NULL, n_inducing = s$levels)))
    }
    ls <- exp(s$log_ls) * if (length(s$log_ls) == 1) g$scaling$scale[1] else g$scaling$scale
    names(ls) <- if (length(ls) == length(g$spec$vars)) g$spec$vars else "(all)"
    Z <- sweep(sweep(s$Z, 2, g$scaling$scale, "*"), 2, g$scaling$center, "+")
    colnames(Z) <- g$spec$vars
    c(out, list(kernel = s$kernel, lengthscale = ls, inducing = Z, n_inducing = nrow(Z)))
  })
  names(gp) <- vapply(gp, `[[`, "", "label")
  sigma <- if (fit$likelihood == "gaussian") sqrt(exp(fit$state$log_noise) + 1e-6) * ysc else NA_real_
  list(gp = gp, sigma = sigma)
}

# Indices of the components' blocks in q (engine order: gp() terms, then the
# parametric block), one vector per component.
component_blocks <- function(fit) {
  sz <- vapply(fit$state$specs, function(s) switch(s$kind, factor = as.integer(s$levels), linear = length(s$cols),
                                                   nrow(s$Z)), 1L)
  Map(function(start, size) start + seq_len(size), cumsum(sz) - sz, sz)
}

# Effective degrees of freedom per component: tr(I - S_cc) in whitened
# coordinates (seed 004's tr(B_c' K_c B_c A^{-1}); their sum is tr(I - S)).
component_edf <- function(fit) {
  vapply(component_blocks(fit), function(idx) length(idx) - sum(diag(fit$state$S)[idx]), 0)
}

# Posterior mean and covariance of the parametric coefficients (data scale).
param_posterior <- function(fit) {
  if (is.null(fit$terms$param)) return(list(coef = numeric(), vcov = matrix(0, 0, 0)))
  k <- length(fit$state$specs)
  sp <- fit$state$specs[[k]]
  idx <- component_blocks(fit)[[k]]
  D <- diag(sp$prior_sd, length(idx))
  A <- fit$terms$param_scaling$A * fit$scaling$y$scale
  b <- drop(A %*% (D %*% fit$state$m[idx]))
  V <- A %*% D %*% fit$state$S[idx, idx, drop = FALSE] %*% D %*% t(A)
  if (fit$intercept) b[1] <- b[1] + fit$scaling$y$center
  names(b) <- rownames(A)
  dimnames(V) <- list(names(b), names(b))
  list(coef = b, vcov = V)
}

# Latent predictor (link scale, data scale) for an internal design.
latent_predict <- function(fit, X, offset, terms = FALSE) {
  st <- fit$state
  r <- .svgp_predict(st$specs, fit$likelihood, st$log_noise, st$engine, list(P = st$P, h = st$h),
                     X, offset / fit$scaling$y$scale, terms, fit$control$threads)
  ysc <- fit$scaling$y
  out <- list(fit = ysc$center + ysc$scale * r$mean, se = ysc$scale * sqrt(r$var))
  if (terms) {
    out$term_fit <- ysc$scale * r$term_mean
    out$term_se <- ysc$scale * sqrt(r$term_var)
  }
  out
}

# Posterior mean and sd of the mean response for latent N(eta, se^2).
response_moments <- function(fit, eta, se, y = NULL) {
  r <- .lik_predictive(fit$likelihood, if (is.null(y)) numeric() else y, eta, se^2,
                       if (fit$likelihood == "gaussian") fit$params$sigma^2 else 1, fit$control$gh_points)
  list(mean = r[, 2], sd = r[, 3], logpred = r[, 1])
}
