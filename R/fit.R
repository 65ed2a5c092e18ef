# The engine-neutral fit layer: the settings every engine's core reads, the
# progress monitor, and the fit object built from an engine's raw result
# through the posterior contract (R/engine.R): hyperparameters on the data
# scale, which terms are centred, the response scaling undone, convergence.

# The settings every engine's C++ core reads (src/glue.h: settings_from()).
common_settings <- function(control) {
  list(jitter = control$jitter, batch_size = control$batch_size, iterations = control$iterations,
       learning_rate = control$learning_rate, tol = control$tol, patience = control$patience,
       learn_inducing = !("inducing" %in% control$fixed), learn_noise = !("sigma" %in% control$fixed),
       gh_points = control$gh_points)
}

# Progress bar (with verbose = TRUE): one line, redrawn in place with "\r",
# showing the iteration, the objective the fit maximises (named `label`, plus
# " + log prior" when the hyperparameters have priors, shifted by `shift`)
# and the time.  Returns the monitor the C++ fit loop calls on the main
# thread after every iteration.  When the frame `envir` (the caller's, by
# default) exits, the bar is replaced by a final line: after a fit that
# returned its result (a list with `objective`, `log_prior`, `iterations`:
# an engine's raw result, its objective shifted by `shift`, or a fit of
# class "scalegp", already on the data scale), the objective that print(),
# summary() and logLik() report, and with priors the log prior and the sum
# the bar showed; after an error or an interrupt the bar is erased.  The bar
# writes no terminal escape codes (cli's progress bars hide and show the
# cursor, and once cli is loaded at a terminal it writes a show-cursor code
# before every prompt), only text and carriage returns.
progress_monitor <- function(control, label, shift = 0, envir = parent.frame()) {
  if (!isTRUE(control$verbose)) return(function(it, obj) TRUE)
  priors <- isTRUE(control$priors)
  shown <- paste0(label, if (priors) " + log prior")
  total <- control$iterations
  start <- proc.time()[["elapsed"]]
  drawn <- 0L          # characters of the line on screen
  last_draw <- -Inf
  last_it <- 0L
  spin <- c("|", "/", "-", "\\")
  elapsed <- function() format_seconds(proc.time()[["elapsed"]] - start)
  draw <- function(text, truncate = TRUE) {
    width <- max(20L, getOption("width", 80L) - 1L)
    if (truncate && nchar(text) > width) text <- substr(text, 1L, width)
    cat("\r", text, strrep(" ", max(0L, drawn - nchar(text))), sep = "")
    drawn <<- nchar(text)
    utils::flush.console()
  }
  finish <- function(res) {
    if (drawn == 0L) return(invisible())
    if (is.list(res) && is.numeric(res$objective) && length(res$objective) == 1L) {
      obj <- res$objective - if (inherits(res, "scalegp")) 0 else shift
      lp <- if (priors && is.numeric(res$log_prior) && length(res$log_prior) == 1L) res$log_prior else 0
      its <- if (is.numeric(res$iterations)) res$iterations else last_it
      text <- paste0("Done: ", its, " iteration", if (its != 1) "s", ", ", elapsed(), " | ", label, " ",
                     format(obj, digits = 7),
                     if (priors) paste0(" (+ log prior ", format(lp, digits = 5), " = ", format(obj + lp, digits = 7), ")"))
      draw(text, truncate = FALSE)
      cat("\n")
    } else {
      cat("\r", strrep(" ", drawn), "\r", sep = "")
    }
    drawn <<- 0L
    utils::flush.console()
    invisible()
  }
  # returnValue(): the frame's result when it returns, the marker after an error or interrupt
  do.call(on.exit, list(substitute(finish(returnValue(FALSE)), list(finish = finish)), add = TRUE),
          envir = envir)
  function(it, obj) {
    last_it <<- it
    now <- proc.time()[["elapsed"]]
    if (it == 1 || (it %% 10 == 0 && now - last_draw >= 0.2)) {
      last_draw <<- now
      draw(sprintf("%s iteration %d (at most %d) | %s %s | %s", spin[(it %/% 10) %% 4 + 1], it, total, shown,
                   format(obj - shift, digits = 6), elapsed()))
    }
    TRUE
  }
}

# A message of a verbose fit (as the progress bar, plain text: see
# progress_monitor()), wrapped to the console's width.
inform <- function(...) {
  parts <- lapply(list(...), function(a) if (is.numeric(a)) format(a, scientific = FALSE, trim = TRUE) else a)
  text <- paste0("i ", paste0(unlist(parts), collapse = ""))
  message(paste(strwrap(text, width = getOption("width", 80L) - 2L, exdent = 2L), collapse = "\n"))
}

# Seconds as the progress bar shows them: "0.4s", "12.3s", "2m 05s".
format_seconds <- function(s) {
  if (s < 60) sprintf("%.1fs", s) else sprintf("%dm %02ds", as.integer(s %/% 60), as.integer(round(s %% 60)))
}

# The data-only terms between an engine's objective and the objective a fit
# reports (objective = engine's - this): the log-Jacobian of the response
# standardisation, ELBO(y) = ELBO(y_std) - n log(scale) over the n rows of
# positive weight (a row of weight 0 adds nothing to the likelihood, as
# logLik.lm() leaves it out), and, for binomial
# counts, minus the log binomial coefficients log choose(m, m y) summed over
# the rows (m the trials, y the proportion; 0 for a 0/1 response), which the
# engines' binomial likelihood leaves out, so that logLik() is that of the
# counts, as glm()'s and mgcv's are.
objective_shift <- function(setup) {
  s <- sum(setup$w > 0) * log(setup$yscaling$scale)
  if (setup$lik %in% c("logit", "probit")) {
    m <- setup$w
    k <- m * setup$y
    s <- s - sum(lgamma(m + 1) - lgamma(k + 1) - lgamma(m - k + 1))
  }
  s
}

# Once per session, the malloc settings under which a fit's large temporary
# matrices are reused rather than returned to the system and faulted in again
# (glibc; .tune_malloc() in src/model.cpp), unless
# options(scalegp.tune_malloc = FALSE).
tune_allocator <- function() {
  if (isTRUE(getOption("scalegp.tune_malloc", TRUE))) .tune_malloc()
  invisible()
}

# The pilot fit an engine may start from (qsgp_options(pilot = )): a
# full-batch inference = "vi" fit (L-BFGS; the collapsed bound for a
# Gaussian model) of the rows of `sub` (a subset_setup()) over exact values,
# its inducing inputs moving in the first 50 iterations unless
# gp_control(fixed = "inducing"), at most 2000 iterations (the default
# gp_control()'s), with the calling engine's control otherwise (its seed,
# tolerance, threads, verbose).  Returns the raw result
# (engine_fit()).  decoupled_pilot() (R/engine-decoupled.R) builds a similar
# fit of its own (its inducing points, no iteration cap).
vi_pilot_fit <- function(sub, control) {
  vc <- control
  vc$options <- structure(vi_options(learn_inducing = if ("inducing" %in% control$fixed) FALSE else 50,
                                     discrete = FALSE), class = c("vi_options", "scalegp_options"))
  vc$batch_size <- sub$n
  vc$iterations <- 2000L
  engine_fit(vi_engine(), sub, vc)
}

# The most refits engine_fit_adapted() makes: from the default 32 sines of
# one input, four halvings of the shortest lengthscale reach 1/16 of it
# (Matern 5/2: about 0.02 of the half-range with the narrowed boxes).
hilbert_max_refits <- 4L

# The line a verbose fit prints before Hilbert refit k: the terms whose
# sines or box changed from setup `old` to `new`.
hilbert_refit_note <- function(old, new, k) {
  box <- function(x) paste(format(x, digits = 3), collapse = " x ")
  ch <- character()
  for (i in seq_along(new$terms$gp)) {
    a <- old$terms$gp[[i]]$hilbert
    b <- new$terms$gp[[i]]$hilbert
    if (is.null(a) || is.null(b) || (identical(a$m, b$m) && isTRUE(all.equal(a$c, b$c)))) next
    what <- c(if (!identical(a$m, b$m)) sprintf("%s -> %s sines", paste(a$m, collapse = " x "), paste(b$m, collapse = " x ")),
              if (!isTRUE(all.equal(a$c, b$c))) sprintf("box %s -> %s half-ranges", box(a$c), box(b$c)))
    ch <- c(ch, paste0(new$terms$gp[[i]]$spec$label, ": ", paste(what, collapse = ", ")))
  }
  sprintf("Hilbert basis refit %d (of at most %d), as the fitted lengthscales ask (see ?gp): %s", k,
          hilbert_max_refits, paste(ch, collapse = "; "))
}

# engine_fit() with the adaptation of gp(basis = "hilbert") terms (?gp,
# hilbert_adapt() in R/components.R): after a fit whose lengthscales the
# basis cannot represent, the enlarged setup is refitted, at most
# hilbert_max_refits times.  Returns the last raw result, its setup and the
# number of refits; the result's counts and times cover every fit (its trace
# and how it stopped are the last fit's).  A verbose fit says what each
# refit changes (hilbert_refit_note()).  Used by gpgam() and by each conditional fit
# of the location-scale model (R/gaulss.R).
engine_fit_adapted <- function(engine, setup, control) {
  res <- engine_fit(engine, setup, control)
  refits <- 0L
  while (refits < hilbert_max_refits && !is.null(adapted <- hilbert_adapt(setup, res))) {
    if (isTRUE(control$verbose)) inform(hilbert_refit_note(setup, adapted, refits + 1L))
    setup <- adapted
    last <- res
    res <- engine_fit(engine, setup, control)
    refits <- refits + 1L
    for (nm in intersect(c("iterations", "evaluations", "passes", "failures"), names(res)))
      res[[nm]] <- res[[nm]] + (last[[nm]] %||% 0)
    if (!is.null(res$seconds)) res$seconds <- res$seconds + last$seconds
  }
  list(res = res, setup = setup, refits = refits)
}

# The fit object of every engine from the model setup and the engine's raw
# result, through the posterior contract (R/engine.R).
collect_fit <- function(setup, res, control, engine) {
  shift <- objective_shift(setup)
  fit <- list(
    terms = setup$terms, scaling = list(y = setup$yscaling), family = setup$family,
    likelihood = setup$lik, engine = engine,
    objective = res$objective - shift, log_prior = res$log_prior %||% 0, trace = res$trace - shift,
    iterations = res$iterations, evaluations = res$evaluations %||% NA_integer_,
    converged = res$converged, stop = res$stop, q_change = res$q_change, failures = res$failures %||% 0L,
    gradient = res$gradient,
    control = control, n = setup$n,
    intercept = setup$intercept, y = setup$y_raw, ylevels = setup$ylevels, prior.weights = setup$w_raw,
    offset = setup$offset_raw, min_df = setup$min_df, lik_fixed = isTRUE(setup$lik_fixed))
  fit$control$options$cluster <- NULL  # connections; not part of the result
  class(fit) <- c(paste0("gpgam_", engine$name), "gpgam", "scalegp")
  fit$state <- posterior_state(fit, res)
  fit <- engine_collect(engine, fit, res)
  if (is.null(names(fit$gradient))) names(fit$gradient) <- parameter_names(fit, length(fit$gradient))
  fit <- centre_terms(fit, setup, res)
  fit$title <- "Gaussian-process additive model"
  fit$params <- natural_params(fit, fixed = isTRUE(setup$lik_fixed))
  # mgcv's scale: the Gaussian noise variance, the Gamma 1 / shape, else 1
  # (the scaled t's scale is in its theta, as mgcv's scat())
  fit$scale <- if (fit$likelihood == "gaussian") fit$params$sigma^2 else if (!is.null(fit$params$shape))
    1 / fit$params$shape else 1
  # estimated quantities: kernel variances and lengthscales, coefficients, the
  # likelihood's own parameters (noise sd, shape, theta unless given; the
  # scaled t's scale and df unless given)
  fit$df <- sum(vapply(fit$params$gp, function(g) 1 + length(g$lengthscale), 1)) + length(param_kept(fit$terms)) +
    if (fit$likelihood == "scat") length(scat_param_names(fit)) else
      (!is.na(fit$params$sigma) || !is.null(fit$params$shape) || (!is.null(fit$params$theta) && !fixed_theta(fit)))
  lp <- fitted_latent(fit, setup, res)
  fit$linear.predictors <- lp$fit
  # (the mean response: the linear predictor itself under the identity link)
  fit$fitted.values <- if (fit$likelihood == "gaussian") lp$fit else response_moments(fit, lp$fit, lp$se)$mean
  fit
}

# The response scaling undone, in one place.  unscale_mean(): a latent
# predictor `eta` on the internal scale (with the user's offset on that
# scale) to the data scale; unscale_sd(): a latent variance to an sd on the
# data scale.  to_data_scale(): `eta` with the internal offset `offset` (the
# user's on the internal scale plus the Poisson centre, which the setup
# moves into the offset) to the data scale with the user's offset.
unscale_mean <- function(ysc, eta) ysc$center + ysc$scale * eta
unscale_sd <- function(ysc, var) ysc$scale * sqrt(var)
to_data_scale <- function(setup, eta, offset = 0) {
  unscale_mean(setup$yscaling, eta - offset) + setup$offset_raw
}

# Hyperparameters on the scale of the data: per gp() term its label, type,
# kernel, variance, lengthscales (named by input), edf, the size of its basis
# and, for an inducing-point posterior, its inducing inputs; the noise sd
# (`sigma`, NA but for Gaussian models; the scale of a scaled t); the Gamma
# `shape`, the negative binomial `theta` (with `theta_fixed`: whether the
# family gave it), the scaled t's `df` and `theta` = c(df, sigma) as
# mgcv's scat() (with `theta_fixed`), from the likelihood's own parameters
# fit$state$log_noise and fit$state$log_df.
natural_params <- function(fit, fixed = FALSE) {
  ysc <- fit$scaling$y$scale
  edf <- component_edf(fit)
  basis <- term_basis(fit)
  gp <- lapply(seq_along(fit$terms$gp), function(i) {
    s <- fit$state$specs[[i]]
    g <- fit$terms$gp[[i]]
    out <- list(label = g$spec$label, type = g$type, variance = exp(s$log_var) * ysc^2, edf = edf[i])
    b <- list(basis = basis[[i]]$size, inducing = basis[[i]]$inducing, n_inducing = basis[[i]]$size)
    if (g$type == "factor") return(c(out, list(kernel = "iid", lengthscale = numeric()), b))
    ls <- exp(s$log_ls) * if (length(s$log_ls) == 1) g$scaling$scale[1] else g$scaling$scale
    names(ls) <- if (length(ls) == length(g$spec$vars)) g$spec$vars else "(all)"
    c(out, list(kernel = s$kernel, lengthscale = ls), b)
  })
  names(gp) <- vapply(gp, `[[`, "", "label")
  sigma <- if (has_sigma(fit$likelihood)) sqrt(exp(fit$state$log_noise) + 1e-6) * ysc else NA_real_
  c(list(gp = gp, sigma = sigma),
    switch(fit$likelihood, gamma = list(shape = exp(fit$state$log_noise)),
           negbin = list(theta = exp(fit$state$log_noise), theta_fixed = fixed),
           scat = {
             df <- fit$min_df + exp(fit$state$log_df)
             list(df = df, min_df = fit$min_df, theta = c(df = df, sigma = sigma), theta_fixed = fixed)
           }))
}

fixed_theta <- function(fit) isTRUE(fit$lik_fixed) || isTRUE(fit$params$theta_fixed)

# The scaled t's estimated parameters, as the fit moves them: its log squared
# scale unless held (gp_control(fixed = "sigma")) or given, then its
# log(df - min_df) unless given.
scat_param_names <- function(fit) {
  c(if (!fixed_theta(fit) && !"sigma" %in% fit$control$fixed) lik_param_label("scat"),
    if (!fixed_theta(fit)) "log(df - min_df)")
}

# The likelihood's own parameter on its natural scale, as the C++ helpers
# (.lik_predictive()) take it: Gaussian noise variance (data scale), Gamma
# shape, negative binomial theta, the scaled t's c(scale^2, df, min_df); 1
# for the other families.
lik_param_value <- function(fit) {
  switch(fit$likelihood, gaussian = fit$params$sigma^2, gamma = fit$params$shape, negbin = fit$params$theta,
         scat = c(fit$params$sigma^2, fit$params$df, fit$params$min_df), 1)
}

# Which gp() terms are reported centred over the data (as mgcv constrains
# every smooth; the intercept carries the means): all but those with
# gp(centre = FALSE) and the factor-`by` curves whose level has no carrier
# (level_carriers()).  Without an intercept only the factor-`by` curves
# whose factor's coefficients carry their levels (y ~ 0 + f + gp(x, by =
# f)); nothing could carry the level of another term.
centre_mask <- function(fit) {
  if (!length(fit$terms$gp)) return(logical(0))
  carriers <- level_carriers(fit)
  vapply(seq_along(fit$terms$gp), function(i) {
    g <- fit$terms$gp[[i]]
    !identical(g$spec$centre, FALSE) &&
      ((is.null(g$by) && fit$intercept) || (!is.null(g$by) && g$by$type == "level" && !is.null(carriers[[i]])))
  }, TRUE)
}

# The names of the kernel parameters of component i as the engines pack them:
# its log variance, then its log lengthscales.
kernel_parameter_names <- function(fit, i) {
  s <- fit$state$specs[[i]]
  lab <- fit$terms$gp[[i]]$spec$label
  c(paste0(lab, ": log variance"),
    if (s$kind != "factor")
      paste0(lab, ": log lengthscale", if (length(s$log_ls) > 1) paste0(" ", fit$terms$gp[[i]]$spec$vars) else ""))
}

# For each gp() term with a factor `by` (one curve per level): how the
# parametric coefficients carry its level's constant when the curve is
# centred, for any contrasts of the factor.  With C the factor's contrast
# matrix (levels x columns), a constant c_l added to the predictor of each
# level l is the change G c of the intercept and the factor's coefficients,
# G = [1, C]^{-1}; so level l's constant moves those coefficients by G's
# column l (treatment contrasts: the intercept and the others' coefficients
# by -1 for the reference level, the level's own coefficient by 1 for the
# others).  Without an intercept a factor coded by one column per level
# (y ~ 0 + f + gp(x, by = f)) carries level l's constant in its own
# coefficient.  Per term NULL (the curves are then not centred) when the
# formula lacks the factor as a parametric main effect (or, without an
# intercept, its columns are not one per level), else list(rows, weights):
# the coefficients' rows (the intercept first, when there is one) and G's
# column l (without an intercept the unit vector of l).
level_carriers <- function(fit) {
  gps <- fit$terms$gp
  out <- vector("list", length(gps))
  cols <- rownames(fit$terms$param_scaling$A) %||% character()
  for (i in seq_along(gps)) {
    by <- gps[[i]]$by
    if (is.null(by) || by$type != "level") next
    lev <- fit$terms$xlevels[[by$var]]
    if (!fit$intercept) {
      rows <- match(paste0(by$var, lev), cols)
      if (length(lev) >= 2 && !anyNA(rows)) out[[i]] <- list(rows = rows, weights = as.numeric(lev == by$level))
      next
    }
    C <- contrast_matrix(fit$terms$contrasts[[by$var]], lev)
    if (is.null(C)) next
    cn <- colnames(C) %||% as.character(seq_len(ncol(C)))
    rows <- c(1L, match(paste0(by$var, cn), cols))
    B <- cbind(1, C)
    if (anyNA(rows) || nrow(B) != ncol(B)) next
    G <- tryCatch(solve(B), error = function(e) NULL)
    if (is.null(G)) next
    out[[i]] <- list(rows = rows, weights = G[, match(by$level, lev)])
  }
  out
}

# The contrast matrix (levels x columns) of a factor with levels `lev`, from
# what model.matrix() records of it (the name of a contrast function, or the
# matrix itself); NULL when it is neither.
contrast_matrix <- function(ctr, lev) {
  if (is.null(lev) || length(lev) < 2) return(NULL)
  if (is.matrix(ctr)) return(if (nrow(ctr) == length(lev)) ctr)
  if (!is.character(ctr) || length(ctr) != 1) return(NULL)
  fun <- tryCatch(match.fun(ctr), error = function(e) NULL)
  if (is.null(fun)) return(NULL)
  C <- tryCatch(fun(lev), error = function(e) NULL)
  if (is.matrix(C) && nrow(C) == length(lev)) C
}

# Posterior mean and sd of the mean response for latent N(eta, se^2).
response_moments <- function(fit, eta, se, y = NULL) {
  r <- .lik_predictive(fit$likelihood, if (is.null(y)) numeric() else y, eta, se^2, lik_param_value(fit),
                       fit$control$gh_points)
  list(mean = r[, 2], sd = r[, 3], logpred = r[, 1])
}

# The note of summary() that a negative binomial theta was estimated at
# the top of its range (log theta at the likelihoods' bound,
# Likelihood::kMaxLogNoise, .lik_log_noise_range()): the counts are no more
# dispersed than Poisson.
lik_bound_note <- function(fit) {
  top <- .lik_log_noise_range()[2]
  if (!identical(fit$likelihood, "negbin") || fixed_theta(fit) || !isTRUE(log(fit$params$theta) >= top - 1e-6))
    return(NULL)
  sprintf(paste0("theta reached the top of its range (%s): the counts show no overdispersion beyond Poisson, ",
                 "so family = poisson() fits the same model"), format(fit$params$theta, digits = 5))
}

# The warning of summary() that a fit did not converge: NULL when it did, or
# when its engine has no stationary-point test (qsgp: its notes say so).
not_converged <- function(fit) {
  if (isTRUE(fit$converged) || isFALSE(fit$engine$stationary_test)) return(NULL)
  paste0("the fit did not converge (", fit$stop %||% "stopping rule not met",
         "); see gp_check(fit) and plot(fit, which = \"trace\")")
}

# gpgam()'s warning, as glm()'s "algorithm did not converge", when a fit over
# all rows per iteration did not reach a stationary point (the iteration
# limit, a stall).  A fit on minibatches ends by its stopping rule on noisy
# estimates, often short of the full-data test: print() and summary() say
# whether it passed.
warning_not_converged <- function(fit) {
  msg <- not_converged(fit)
  if (!is.null(msg) && !isTRUE(fit$control$batch_size < fit$n)) warn_convergence(msg)
}

# The warning that a fit did not converge (gpgam()'s, the location-scale
# model's): a condition of class "scalegp_convergence_warning", unless
# options(scalegp.warn_convergence = FALSE) turns it off.
warn_convergence <- function(msg) {
  if (isFALSE(getOption("scalegp.warn_convergence"))) return(invisible())
  warning(warningCondition(msg, class = "scalegp_convergence_warning"))
}

# One line on how the fit ended: converged at a stationary point (or, after
# a pilot fit, at the posterior's closed-form optimum), or why not; the
# largest gradient entry and the parameter it belongs to, and the
# parameters a converged fit left at a bound.
convergence_line <- function(fit) {
  g <- fit$gradient
  gtol <- fit$control$tol * fit$n
  # (a fit that converged with entries above the tolerance has them at a
  # bound of their range, where the stopping rule projects the gradient out)
  bound <- isTRUE(fit$converged) & abs(g) > gtol
  free <- g[!bound]
  largest <- if (length(free)) {
    j <- which.max(abs(free))
    sprintf("largest gradient %s (%s), tolerance %s", format(abs(free[j]), digits = 2), names(free)[j],
            format(gtol, digits = 2))
  } else if (length(g)) "no parameter inside its bounds" else "no parameters estimated"
  if (any(bound))
    largest <- paste0(largest, "; at a bound of its range: ",
                      paste(sprintf("%s (gradient %s)", names(g)[bound], format(abs(g[bound]), digits = 2)),
                            collapse = ", "))
  # (a decoupled fit after a pilot: the posterior at its optimum in closed
  # form, the hyperparameters the pilot's, not stationary on all rows)
  if (isTRUE(fit$converged) && grepl("^closed form", fit$stop %||% ""))
    paste0("the posterior at its optimum in closed form, at the pilot fit's kernel, noise and inducing inputs ",
           "(not refitted on all rows): ", largest)
  else if (isTRUE(fit$converged)) paste0("converged to a stationary point: ", largest)
  else paste0("NOT converged (", fit$stop %||% "stopping rule not met", "): ", largest)
}
