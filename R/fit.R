# The engine-neutral fit layer: the settings every engine's core reads, the
# progress monitor, the fit object built from an engine's raw result, and
# the quantities derived from the posterior of the inducing variables
# (hyperparameters on the data scale, effective degrees of freedom,
# coefficients, latent and response predictions).

# The settings every engine's C++ core reads (src/glue.h: settings_from()).
common_settings <- function(control) {
  list(jitter = control$jitter, batch_size = control$batch_size, iterations = control$iterations,
       learning_rate = control$learning_rate, tol = control$tol, patience = control$patience,
       learn_inducing = !("inducing" %in% control$fixed), learn_noise = !("sigma" %in% control$fixed),
       gh_points = control$gh_points)
}

# Progress bar (with verbose = TRUE) showing the iteration, the objective
# (named `label`, shifted by `shift`) and the time.  Returns the monitor the
# C++ fit loop calls on the main thread after every iteration; the bar is
# closed when the frame `envir` (the caller's, by default) exits, so a fit
# that ends early, fails or is interrupted leaves no bar behind.
progress_monitor <- function(control, label, shift = 0, envir = parent.frame()) {
  if (!isTRUE(control$verbose)) return(function(it, obj) TRUE)
  value <- NA_real_
  bar <- cli::cli_progress_bar(
    "Fitting", total = control$iterations, .auto_close = FALSE,
    format = paste0("{cli::pb_spin} iteration {cli::pb_current} (at most {cli::pb_total}) | ", label,
                    " {format(value, digits = 6)} | {cli::pb_elapsed}"))
  env <- environment()
  # (the bar's format is evaluated in `env` on closing too: cli >= 3.6 does)
  do.call(on.exit, list(substitute(cli::cli_progress_done(id = bar, .envir = env), list(bar = bar, env = env)),
                        add = TRUE), envir = envir)
  function(it, obj) {
    if (it %% 10 == 0 || it == 1) {
      value <<- obj - shift
      cli::cli_progress_update(id = bar, set = it, force = it == 1, .envir = env)
    }
    TRUE
  }
}

# Log-Jacobian of the response standardisation: ELBO(y) = ELBO(y_std) - this.
jacobian <- function(setup) setup$n * log(setup$yscaling$scale)

# Once per session, the malloc settings under which a fit's large temporary
# matrices are reused rather than returned to the system and faulted in again
# (glibc; .tune_malloc() in src/model.cpp), unless
# options(scalegp.tune_malloc = FALSE).
tune_allocator <- function() {
  if (isTRUE(getOption("scalegp.tune_malloc", TRUE))) .tune_malloc()
  invisible()
}

# The fit object of every engine from the model setup and the engine's raw result.
collect_fit <- function(setup, res, control, engine) {
  jac <- jacobian(setup)
  state <- list(specs = res$specs, log_noise = res$log_noise %||% 0, P = res$state$P, h = res$state$h,
                m = res$m, S = res$S)
  fit <- list(
    terms = setup$terms, scaling = list(y = setup$yscaling), family = setup$family,
    likelihood = setup$lik, engine = engine, state = state,
    objective = res$objective - jac, log_prior = res$log_prior %||% 0, trace = res$trace - jac,
    iterations = res$iterations, evaluations = res$evaluations %||% NA_integer_,
    converged = res$converged, stop = res$stop, q_change = res$q_change, failures = res$failures %||% 0L,
    gradient = res$gradient,
    control = control, n = setup$n,
    intercept = setup$intercept, y = setup$y_raw, ylevels = setup$ylevels, prior.weights = setup$w_raw,
    offset = setup$offset_raw)
  fit$control$cluster <- NULL  # connections; not part of the result
  class(fit) <- c(paste0("gpgam_", engine$name), "gpgam", "scalegp")
  fit <- engine_collect(engine, fit, res)
  if (is.null(names(fit$gradient))) names(fit$gradient) <- parameter_names(fit, length(fit$gradient))
  fit$state$center <- term_centres(fit, setup, res$feature_means)
  fit$title <- "Gaussian-process additive model"
  fit$params <- natural_params(fit)
  # estimated quantities: kernel variances and lengthscales, coefficients, noise sd
  fit$df <- sum(vapply(fit$params$gp, function(g) 1 + length(g$lengthscale), 1)) + length(coef(fit)) +
    !is.na(fit$params$sigma)
  # (a Gaussian mean response needs no latent variance).  A discretised fit
  # returns the latent predictor of each row: from its values when no input
  # was rounded (the same numbers, sums over distinct values), else the mean
  # at its own inputs (terms over one or two rounded inputs interpolated
  # from their rounding grid, Svgp::row_means_at_inputs(): the rounded
  # inputs themselves put the fitted values of gp(x3, x4) on a 100 x 100 grid
  # 0.5 posterior sd off on average) and the variance at its rounded values.
  lp <- if (!is.null(res$row_mean)) {
    ysc <- fit$scaling$y
    # (the internal offset is the user's on the internal scale, plus the
    # Poisson centre; the user's offset is added on the data scale)
    list(fit = ysc$center + ysc$scale * (res$row_mean - setup$offset) + setup$offset_raw,
         se = if (!is.null(res$row_var)) ysc$scale * sqrt(res$row_var) else numeric(length(res$row_mean)))
  } else {
    latent_predict(fit, setup$X, setup$offset_raw, se = fit$likelihood != "gaussian")
  }
  fit$linear.predictors <- lp$fit
  # (the mean response: the linear predictor itself under the identity link)
  fit$fitted.values <- if (fit$likelihood == "gaussian") lp$fit else response_moments(fit, lp$fit, lp$se)$mean
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
# coordinates (Adam, Durrande and John 2018: tr(B_c' K_c B_c A^{-1}); their sum is tr(I - S)).
component_edf <- function(fit) {
  vapply(component_blocks(fit), function(idx) length(idx) - sum(diag(fit$state$S)[idx]), 0)
}

# Identifiable gp() terms, as mgcv constrains every smooth: a term is
# reported centred over the data, f_c(x) - mean_i f_c(x_i), and the intercept
# carries the means.  Both are linear in v: the term's features are
# phi_c(x) - phibar_c.  Returns phibar (zero for the terms with
# gp(centre = FALSE), for the parametric block, and without an intercept,
# which nothing could carry the level to); the fitted predictor is unchanged.
# `means`: the feature means over the data when known.
term_centres <- function(fit, setup, means = NULL) {
  blocks <- component_blocks(fit)
  ctr <- numeric(sum(lengths(blocks)))
  if (!setup$intercept) return(ctr)
  carriers <- level_carriers(fit)
  keep <- vapply(seq_along(fit$terms$gp), function(i) {
    g <- fit$terms$gp[[i]]
    !identical(g$spec$centre, FALSE) &&
      (is.null(g$by) || (g$by$type == "level" && !is.na(carriers$row[i])))
  }, TRUE)
  if (!any(keep)) return(ctr)
  # (a discretised fit returns them, from its distinct values)
  means <- means %||% .gp_feature_means(fit$state$specs, setup$X, fit$control$jitter, fit$control$threads)
  for (i in which(keep)) {
    by <- fit$terms$gp[[i]]$by
    # a level's curve is centred over that level's rows
    ctr[blocks[[i]]] <- means[blocks[[i]]] * if (is.null(by)) 1 else setup$n / by$n
  }
  ctr
}

# For each gp() term with a factor `by` (one curve per level): the row of the
# parametric coefficients that carries its level when it is centred: the
# intercept (row 1) for the factor's reference level, the factor's
# treatment-contrast coefficient for the others; NA when the formula lacks
# the factor as a parametric term (the curves are then not centred).
level_carriers <- function(fit) {
  gps <- fit$terms$gp
  row <- rep(NA_integer_, length(gps))
  ref <- rep(NA_integer_, length(gps))
  cols <- rownames(fit$terms$param_scaling$A) %||% character()
  for (i in seq_along(gps)) {
    by <- gps[[i]]$by
    if (is.null(by) || by$type != "level" || !fit$intercept) next
    lev <- fit$terms$xlevels[[by$var]]
    ctr <- fit$terms$contrasts[[by$var]]
    if (is.null(lev) || !identical(ctr, "contr.treatment")) next
    same <- which(vapply(gps, function(g) identical(g$by$var, by$var) && identical(g$spec$vars, gps[[i]]$spec$vars), TRUE))
    ref[i] <- same[vapply(gps[same], function(g) identical(g$by$level, lev[1]), TRUE)][1]
    row[i] <- if (by$level == lev[1]) 1L else match(paste0(by$var, by$level), cols)
  }
  list(row = row, ref = ref)
}

# Posterior mean and covariance of the parametric coefficients (data scale):
# linear functions L v of the inducing variables (the intercept includes the
# data means of the centred terms, see term_centres()).
param_posterior <- function(fit) {
  if (is.null(fit$terms$param)) return(list(coef = numeric(), vcov = matrix(0, 0, 0)))
  k <- length(fit$state$specs)
  sp <- fit$state$specs[[k]]
  idx <- component_blocks(fit)[[k]]
  ysc <- fit$scaling$y
  A <- fit$terms$param_scaling$A * ysc$scale
  L <- matrix(0, nrow(A), length(fit$state$m))
  L[, idx] <- A %*% diag(sp$prior_sd, length(idx))
  ctr <- fit$state$center
  if (fit$intercept && !is.null(ctr) && any(ctr != 0)) {
    blocks <- component_blocks(fit)
    carriers <- level_carriers(fit)
    levels_c <- which(!is.na(carriers$row))
    plain <- ctr
    for (i in levels_c) plain[blocks[[i]]] <- 0
    L[1, ] <- L[1, ] + ysc$scale * plain
    # a level's constant goes to the rows of that level: the intercept for the
    # reference level, the level's coefficient (minus the reference) for the others
    for (i in levels_c) {
      r <- carriers$row[i]
      L[r, blocks[[i]]] <- L[r, blocks[[i]]] + ysc$scale * ctr[blocks[[i]]]
      j <- carriers$ref[i]
      if (r != 1L && !is.na(j)) L[r, blocks[[j]]] <- L[r, blocks[[j]]] - ysc$scale * ctr[blocks[[j]]]
    }
  }
  b <- drop(L %*% fit$state$m)
  V <- L %*% fit$state$S %*% t(L)
  # (mean_shift: the data average of a part of the mean outside q, which a
  # centred term hands to the intercept; the decoupled engine's mean bases)
  if (fit$intercept) b[1] <- b[1] + ysc$center + ysc$scale * (fit$state$mean_shift %||% 0)
  names(b) <- rownames(A)
  dimnames(V) <- list(names(b), names(b))
  list(coef = b, vcov = V)
}

# Latent predictor (link scale, data scale) for an internal design, from a
# whitened Gaussian posterior (the default; engines with another posterior
# have their own method).
latent_predict.gpgam <- function(fit, X, offset, terms = FALSE, se = TRUE) {
  st <- fit$state
  r <- .gp_predict(st$specs, list(P = st$P, h = st$h), X, offset / fit$scaling$y$scale, terms,
                   fit$control$jitter, fit$control$threads, if (terms && any(st$center != 0)) st$center,
                   variance = se || terms)
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

# Names of the packed parameters the engines move (the layout of
# AdditiveModel::pack_hyper() and the Gaussian noise last): per component its
# log variance and log lengthscales (when learned), then its inducing
# coordinates (when learned).
parameter_names <- function(fit, n, learn_z = !("inducing" %in% fit$control$fixed)) {
  out <- character()
  for (i in seq_along(fit$state$specs)) {
    s <- fit$state$specs[[i]]
    if (s$kind == "linear") next
    lab <- fit$terms$gp[[i]]$spec$label
    if (isTRUE(s$learn_kernel)) {
      out <- c(out, paste0(lab, ": log variance"))
      if (s$kind != "factor")
        out <- c(out, paste0(lab, ": log lengthscale",
                             if (length(s$log_ls) > 1) paste0(" ", fit$terms$gp[[i]]$spec$vars) else ""))
    }
    if (s$kind != "factor" && learn_z)
      out <- c(out, paste0(lab, ": inducing input ", rep(seq_len(nrow(s$Z)), ncol(s$Z)), ",",
                           rep(seq_len(ncol(s$Z)), each = nrow(s$Z))))
  }
  if (length(out) < n) out <- c(out, "log noise variance")
  # (a fit that stopped moving the inducing inputs reports the gradient without them)
  if (length(out) != n) out <- if (learn_z) parameter_names(fit, n, FALSE) else paste0("parameter ", seq_len(n))
  out
}

# One line on how the fit ended: converged at a stationary point, or why not;
# the largest gradient entry and the parameter it belongs to.
convergence_line <- function(fit) {
  g <- fit$gradient
  gtol <- fit$control$tol * fit$n
  largest <- if (length(g)) {
    j <- which.max(abs(g))
    sprintf("largest gradient %s (%s), tolerance %s", format(abs(g[j]), digits = 2), names(g)[j],
            format(gtol, digits = 2))
  } else "no parameters estimated"
  if (isTRUE(fit$converged)) paste0("converged to a stationary point: ", largest)
  else paste0("NOT converged (", fit$stop %||% "stopping rule not met", "): ", largest)
}
