# inference = "decoupled": the decoupled variational GP (core: decoupled.hpp,
# glue: decoupled.cpp).  One gp() term plus parametric terms; the posterior
# mean has the inducing inputs plus many more mean bases, the covariance the
# inducing inputs only.

#' @include engine.R engine-vi.R engine-ep.R
NULL

#' Options of the decoupled variational engine
#'
#' Options of `gpgam(inference = "decoupled")`, the decoupled variational GP
#' of Cheng and Boots (2017): the posterior mean of the GP has
#' \eqn{M_\alpha}{M_alpha} basis functions (`mean_basis`) at a cost linear in
#' \eqn{M_\alpha}{M_alpha}, the posterior covariance only the
#' \eqn{M_\beta}{M_beta} inducing inputs (`gp_control(inducing = )`), whose
#' cost is cubic.  So the mean can follow a complex function that a sparse
#' variational GP with \eqn{M_\beta}{M_beta} inducing points would smooth
#' over, at about the price of that GP.  Pass the options to [gp_control()] by
#' name, e.g. `gp_control(mean_basis = 4096)`.
#'
#' The fit uses the hybrid parametrisation of Cheng and Boots (2017,
#' Appendix A.3): the mean is that of the sparse variational GP on the
#' inducing inputs plus \eqn{k(x, A) a}{k(x, A) a} over
#' \eqn{M_\alpha - M_\beta}{M_alpha - M_beta} further bases \eqn{A}{A}
#' (placed at data rows, `add_basis` per iteration, their Algorithm 1), and
#' the covariance is that of the sparse variational GP.  With `mean_basis`
#' equal to the number of inducing points the model is `inference = "vi"`.
#' On minibatches of rows (the default from 4097 rows) the Gaussian posterior
#' of the inducing variables takes natural-gradient steps (as with
#' `inference = "vi"`); the coefficients \eqn{a}{a}, the basis locations, the
#' inducing inputs, the kernel hyperparameters and the noise take Adam steps
#' of size `learning_rate / (1 + rate_decay * sqrt(t))` (the paper's
#' schedule).  That is the paper's algorithm; with a Gaussian likelihood
#' the package instead, by default, takes the kernel and noise from a
#' full-batch fit of up to 4096 rows and then sets the mean and covariance to
#' their closed-form optimum on all rows (see `pilot`; `bench/README.md` in
#' the source repository compares the two routes on several data sets).  A
#' fit over all rows (the default up to 4096 rows, any family) places all
#' bases at the start and runs L-BFGS over the same parameters with the
#' posterior of the inducing variables optimal at each step (for binomial
#' and Poisson fits found by damped natural-gradient steps, as with
#' `inference = "vi"`); the bases and
#' inducing inputs move in its first 200 iterations only, and it stops at a
#' stationary point of the ELBO in the others.  The bases use the kernel of the
#' `gp()` term (the paper's generalised SE bases with their own lengthscales
#' are not implemented).  `logLik()` is the ELBO on all rows, with the exact
#' KL term.
#'
#' Only one `gp()` term (over any number of inputs, without `by`) plus
#' parametric terms is supported; a formula with several `gp()` terms is
#' refused (use `inference = "vi"` for additive models).
#'
#' @param mean_basis \eqn{M_\alpha}{M_alpha}, the number of basis functions of
#'   the posterior mean, including the inducing points.  `NULL` (default):
#'   `min(16384, max(M_beta, 8 * sqrt(n)))` rounded, and at most the number
#'   of distinct input rows (about 800 bases at 1e4 rows, 3600 at 2e5);
#'   after a pilot fit (see `pilot`) more, since the mean is then solved for
#'   once instead of learned by steps.
#' @param add_basis bases added per iteration until there are `mean_basis`
#'   (the paper's \eqn{N_\Delta}{N_Delta} = 128).
#' @param kl_columns the KL term's \eqn{a' K_{AA} a}{a' K_AA a} is estimated
#'   at each iteration from this many columns of \eqn{K_{AA}}{K_AA} (a
#'   window at a random start), which is unbiased and costs
#'   O(`kl_columns` x \eqn{M_\alpha}{M_alpha}) instead of
#'   O(\eqn{M_\alpha^2}{M_alpha^2}); all columns when there are fewer.
#' @param rate_decay the Adam step size at iteration t is `learning_rate /
#'   (1 + rate_decay * sqrt(t))` (0: constant).
#' @param mean_learning_rate Adam step size of the coefficients of the mean
#'   bases, on the scale `sigma_f^2 sqrt(M) a` for M further bases and kernel
#'   variance sigma_f^2 (the Jacobi preconditioner of Cheng and Boots 2017,
#'   Appendix A.1, and a scale for M); `NULL`: `learning_rate`.  Cheng and
#'   Boots chose the step size per method from 0.1, 0.01 and 0.001; a larger
#'   step than the default can help (`bench/README.md`).
#' @param natgrad_step step size of the natural-gradient update of the
#'   posterior of the inducing variables; `NULL` chooses 1 (Gaussian, all
#'   rows), 0.5 (other families, all rows) or 0.1 (minibatches).
#' @param mean_solve a Gaussian fit on minibatches ends with the exact
#'   optimum of the posterior mean: with a Gaussian likelihood the ELBO is
#'   quadratic in the mean's coefficients (those of the inducing points and
#'   of the mean bases), so one linear system of order
#'   \eqn{T = M_\alpha}{T = M_alpha} (plus the parametric coefficients) gives
#'   them at the final hyperparameters, bases and inducing inputs; the noise
#'   variance is then refitted in closed form and the mean solved again (at
#'   most 6 rounds).  It costs one pass over the rows of
#'   O(\eqn{n T^2}{n T^2}) operations and O(\eqn{T^2}{T^2}) memory.  `NULL`
#'   (default): done when \eqn{n T^2 \le 2 \times 10^{12}}{n T^2 <= 2e12}; `TRUE`:
#'   always; `FALSE`: never (the paper's algorithm, Adam steps only).
#'   Ignored for other families, for fits over all rows and after a pilot
#'   fit (which always ends with the exact mean).
#' @param pilot rows of a pilot fit that sets the kernel hyperparameters and
#'   the noise of a Gaussian fit on minibatches.  The pilot is a full-batch
#'   `inference = "vi"` fit (L-BFGS on the collapsed bound of Titsias 2009)
#'   of `pilot` rows drawn with the fit's seed, with the term's `k` or
#'   `gp_control(inducing = )` inducing points (512 when neither is set, at
#'   most an eighth of the pilot rows) that move in its first 50 iterations.
#'   The decoupled fit then keeps that kernel, noise and those inducing
#'   inputs (its covariance basis), places the mean bases at distinct data
#'   rows, and sets their coefficients and the posterior of the inducing
#'   variables to their joint optimum on all rows in closed form (one pass of
#'   O(\eqn{n M_\alpha^2}{n M_alpha^2}) operations, no minibatch steps); by
#'   default \eqn{M_\alpha}{M_alpha} is then the least of n / 2,
#'   \eqn{\sqrt{8 \times 10^{11} / n}}{sqrt(8e11 / n)} and 8192 (3700 at
#'   7373 rows, 4700 at 36000, 2100 at 178000), at least the number of
#'   inducing points.  Why: learned beside a covariance of few
#'   inducing points, the ELBO's lengthscales and noise absorb what those
#'   points leave unexplained (its trace term) and the mean is too smooth
#'   (`bench/README.md` compares the two routes).  `NULL` (default): a third of the rows, at
#'   least 2048 and at most 4096, for a Gaussian fit on minibatches (more
#'   than 4096 rows), none otherwise, and none when
#'   a given `mean_basis` would make the solve cost
#'   \eqn{n M_\alpha^2 > 2 \times 10^{12}}{n M_alpha^2 > 2e12} (e.g. the
#'   paper's 16384 bases on 2e5 rows); `0`:
#'   no pilot, the paper's algorithm (Adam steps on minibatches for
#'   everything).
#' @param discrete a Gaussian fit over all rows (or the closed-form solve
#'   after a pilot fit) forms its products over the distinct values of the
#'   gp() term's inputs after rounding, with weighted counts, as
#'   [vi_options()] does (the mean bases enter as a shift by value), when
#'   the term has at most half as many distinct values as there are rows;
#'   the cost of an evaluation then depends on the number of values, not of
#'   rows.  `NA` (default): from 5000 rows; `TRUE`, `FALSE`: always, never.
#' @param bins the rounding of `discrete`, as in [vi_options()] (`Inf`:
#'   exact values; rows are only grouped by equal inputs).
#' @return A list of the options.
#' @references Cheng and Boots (2017) Variational inference for Gaussian
#'   process models with linear complexity. NeurIPS.  Hensman, Fusi and
#'   Lawrence (2013) Gaussian processes for big data. UAI.
#' @seealso [gp_control()], [vi_options()]
#' @examples
#' decoupled_options()
#' gp_control(inducing = 64, mean_basis = 1024)
#' @export
decoupled_options <- function(mean_basis = NULL, add_basis = 128, kl_columns = 128, rate_decay = 0.1,
                              mean_learning_rate = NULL, natgrad_step = NULL, mean_solve = NULL, pilot = NULL,
                              discrete = NA, bins = 1000) {
  if (!is.null(pilot)) {
    check_count(pilot, "pilot", zero = TRUE)
    if (pilot > 0 && pilot < 64) stop_arg("pilot", "must be 0 (no pilot fit) or at least 64 rows")
  }
  if (!is.null(mean_solve) && (!is.logical(mean_solve) || length(mean_solve) != 1 || is.na(mean_solve)))
    stop_arg("mean_solve", "must be NULL, TRUE or FALSE")
  if (!is.logical(discrete) || length(discrete) != 1L)
    stop_arg("discrete", "must be TRUE, FALSE or NA")
  if (!is.numeric(bins) || length(bins) != 1L || is.na(bins) || bins < 2)
    stop_arg("bins", "must be a number >= 2 (Inf: no rounding)")
  if (!is.null(mean_learning_rate)) check_positive(mean_learning_rate, "mean_learning_rate")
  if (!is.null(mean_basis)) check_count(mean_basis, "mean_basis")
  check_count(add_basis, "add_basis")
  check_count(kl_columns, "kl_columns")
  if (!is.numeric(rate_decay) || length(rate_decay) != 1 || !is.finite(rate_decay) || rate_decay < 0)
    stop_arg("rate_decay", "must be a single non-negative number")
  if (!is.null(natgrad_step)) {
    check_positive(natgrad_step, "natgrad_step")
    if (natgrad_step > 1) stop_arg("natgrad_step", "must be in (0, 1]")
  }
  list(mean_basis = if (!is.null(mean_basis)) as.integer(mean_basis), add_basis = as.integer(add_basis),
       kl_columns = as.integer(kl_columns), rate_decay = rate_decay, mean_learning_rate = mean_learning_rate,
       natgrad_step = natgrad_step, mean_solve = mean_solve, pilot = if (!is.null(pilot)) as.integer(pilot),
       discrete = discrete, bins = bins)
}

decoupled_engine <- function() {
  new_engine("decoupled", label = "decoupled variational GP", objective = "ELBO",
             objective_note = "a lower bound on the log marginal likelihood", options = decoupled_options)
}

register_engine("decoupled", decoupled_engine)

# Minibatches of 1024 rows (the paper's) beyond 4096 rows.
default_batch_size.engine_decoupled <- function(engine, n, family, opts) if (n <= 4096) n else 1024L

# One stationary gp() term without `by`, plus parametric blocks; the index of its component.
check_decoupled_setup <- function(setup) {
  by <- Filter(function(g) !is.null(g$by), setup$terms$gp)
  if (length(by))
    stop_arg("formula", "has ", sub(":[^:]*$", "", by[[1]]$spec$label), " with 'by = ", by[[1]]$by$var,
             "'; inference = \"decoupled\" does not support 'by' (use inference = \"vi\")")
  kinds <- vapply(setup$comps, `[[`, "", "kind")
  gp <- which(kinds != "linear")
  labels <- gp_labels(setup$terms)
  if (length(gp) != 1)
    stop_arg("formula", "has ", length(gp), " gp() components (", paste(labels, collapse = ", "),
             "); inference = \"decoupled\" fits one gp() term (over any number of inputs) plus parametric ",
             "terms: write gp(x1, x2, ...) for a joint term, or use inference = \"vi\" for additive models")
  s <- setup$comps[[gp]]
  if (s$kind == "factor")
    stop_arg("formula", "has the random effect ", labels, "; inference = \"decoupled\" needs a gp() term of numeric inputs")
  if (s$kind != "stationary")
    stop_arg("formula", labels, " has centre = TRUE; inference = \"decoupled\" fits the uncentred kernel")
  gp
}

# M_alpha: the user's (at least M_beta), or the default (8 sqrt(n) up to
# 16384; after a pilot fit, the least of n / 2, sqrt(8e11 / n) and 8192); at
# least M_beta, at most M_beta plus the number of distinct input rows.
decoupled_mean_basis <- function(given, M, setup, gp, closed_form = FALSE) {
  n <- setup$n
  distinct <- n_unique_rows(setup$X[, setup$comps[[gp]]$cols + 1L, drop = FALSE])
  if (!is.null(given)) {
    if (given < M)
      stop_arg("mean_basis", "(", given, ") must be at least the number of inducing points (", M, ")")
    if (given - M > distinct) {
      warning(sprintf("'mean_basis' = %d exceeds the %d inducing points plus the %d distinct input rows; using %d",
                      given, M, distinct, M + distinct), call. = FALSE)
      given <- M + distinct
    }
    return(as.integer(given))
  }
  # (after a pilot fit the cost is the one solve, O(n M_alpha^2): about 8e11)
  target <- if (closed_form) min(8192, floor(sqrt(8e11 / n)), ceiling(n / 2)) else min(16384, round(8 * sqrt(n)))
  as.integer(min(M + distinct, max(M, target)))
}

# Whether one solve for the exact mean over T coefficients on n rows (one
# pass of O(n T^2)) is cheap enough to do by default (about half a minute
# here at n T^2 = 2e12).
decoupled_solve_cheap <- function(n, T) n * as.numeric(T)^2 <= 2e12

# Whether a fit ends with the exact mean (decoupled_options(mean_solve = )):
# Gaussian fits on minibatches, by default when the solve is cheap.
decoupled_mean_solve <- function(control, setup, Malpha) {
  if (setup$lik != "gaussian" || control$batch_size >= setup$n || isFALSE(control$options$mean_solve)) return(FALSE)
  isTRUE(control$options$mean_solve) || decoupled_solve_cheap(setup$n, Malpha + ncol(setup$X))
}

# The options the C++ core reads (src/decoupled.cpp), from the engine's
# options: M_alpha mean bases over M inducing points, after a pilot fit or not.
decoupled_core_options <- function(control, setup, M, Malpha, pilot) {
  o <- control$options
  list(natgrad_step = o$natgrad_step %||% -1, mean_basis = Malpha - M, add_basis = o$add_basis %||% 128L,
       kl_columns = o$kl_columns %||% 128L, rate_decay = o$rate_decay %||% 0.1,
       rate_ratio = (o$mean_learning_rate %||% control$learning_rate) / control$learning_rate,
       mean_solve = !pilot && decoupled_mean_solve(control, setup, Malpha), closed_form = pilot,
       discrete = setup$lik == "gaussian" && !isFALSE(o$discrete) && (isTRUE(o$discrete) || setup$n >= 5000),
       bins = if (is.finite(o$bins %||% 1000)) o$bins %||% 1000 else 0)
}

engine_fit.engine_decoupled <- function(engine, setup, control) {
  gp <- check_decoupled_setup(setup)
  rows <- decoupled_pilot_rows(control, setup)
  pilot <- if (rows > 0) decoupled_pilot(setup, control, gp, rows)
  if (!is.null(pilot)) {
    setup$comps <- pilot$comps
    setup$log_noise <- pilot$log_noise
  }
  M <- nrow(setup$comps[[gp]]$Z)
  Malpha <- decoupled_mean_basis(control$options$mean_basis, M, setup, gp, closed_form = !is.null(pilot))
  options <- decoupled_core_options(control, setup, M, Malpha, pilot = !is.null(pilot))
  if (isTRUE(control$verbose)) {
    if (!is.null(pilot))
      inform("Now the exact posterior at the pilot's kernel and noise: the mean over ", Malpha,
             " bases and the covariance on its ", M, " inducing points (one pass over the ", setup$n, " rows).")
    else if (options$mean_solve)
      inform("After the minibatch steps, the exact posterior mean over the ", Malpha,
             " bases (one more pass over the ", setup$n, " rows).")
  }
  settings <- common_settings(control)
  # (a fit over all rows: the bases and inducing inputs move in the first 200 iterations, as in vi_options())
  settings$inducing_iterations <- 200L
  if (!is.null(pilot)) settings$learn_inducing <- settings$learn_noise <- FALSE
  res <- .decoupled_fit(setup$X, setup$y, setup$w, setup$offset, setup$comps, setup$lik, setup$log_noise,
                        settings, options, control$threads, control$seed,
                        progress_monitor(control, engine$objective, objective_shift(setup)))
  res$gp_index <- gp
  res$mean_basis_total <- Malpha
  if (!is.null(pilot)) {
    res$pilot <- list(rows = rows, inducing = M, seconds = pilot$seconds, iterations = pilot$iterations,
                      converged = pilot$converged)
    res$seconds[["init"]] <- res$seconds[["init"]] + pilot$seconds
  }
  res
}

# ---- the pilot fit (decoupled_options(pilot = )) -----------------------------------
# Rows of the pilot fit: the user's, or by default a third of the rows, at
# least 2048 and at most 4096 (decoupled_pilot_default()), for a Gaussian fit on
# minibatches unless a given mean_basis makes the closed-form solve costly
# (decoupled_solve_cheap(); 0: none).  At most all rows.
decoupled_pilot_rows <- function(control, setup) {
  if (setup$lik != "gaussian" || control$batch_size >= setup$n) {
    if (isTRUE(control$options$pilot > 0))
      warning("'pilot' is used by Gaussian fits on minibatches only; ignored", call. = FALSE)
    return(0L)
  }
  if (is.null(control$options$pilot) && !is.null(control$options$mean_basis) && !decoupled_solve_cheap(setup$n, control$options$mean_basis))
    return(0L)
  as.integer(min(setup$n, control$options$pilot %||% decoupled_pilot_default(setup$n)))
}

# The default pilot rows: a third of n, within [2048, 4096].  On kin8nm (7373
# rows, 8 inputs) 2458 rows took 14 s to a test RMSE of 0.076 where 4096
# took 39 s to 0.075 (bench/decoupled_gpgp.R).
decoupled_pilot_default <- function(n) as.integer(min(4096, max(2048, ceiling(n / 3))))

# A full-batch inference = "vi" fit (L-BFGS on the collapsed bound) of `rows`
# random rows (drawn with the fit's seed; R's random numbers are left as they
# were) whose inducing points are the gp() term's k or gp_control(inducing),
# else 512, at most an eighth of the rows; they start at k-means centres of
# the pilot rows (or at the term's given inducing inputs) and move in its
# first 50 iterations unless fixed.  Returns the components with the fitted
# kernel and inducing inputs (no longer learned), the noise and the time.
decoupled_pilot <- function(setup, control, gp, rows) {
  t0 <- proc.time()[["elapsed"]]
  sub <- subset_setup(setup, seeded_sample(setup$n, rows, control$seed))
  comp <- setup$comps[[gp]]
  term <- setup$terms$gp[[1]]
  if (is.null(term$spec$inducing)) {
    Xs <- sub$X[, comp$cols + 1L, drop = FALSE]
    Mp <- min(term$spec$k %||% control$inducing %||% 512L, max(1L, rows %/% 8L), n_unique_rows(Xs))
    comp$Z <- inducing_init(Xs, Xs, utils::modifyList(term$spec, list(k = Mp)), term$scaling, control)
    if (isTRUE(control$priors))
      comp[c("ls_a", "ls_b")] <- hyper_priors(term$range, term$scaling, term$spec, Mp, setup$yscaling)[c("ls_a", "ls_b")]
  }
  sub$comps[[gp]] <- comp
  if (isTRUE(control$verbose))
    inform("Kernel and noise from a full-batch pilot fit of ", rows, " random rows with ", nrow(comp$Z),
           " inducing points (decoupled_options(pilot); pilot = 0 for the minibatch algorithm).")
  vc <- control
  vc$options <- structure(vi_options(learn_inducing = if ("inducing" %in% control$fixed) FALSE else 50,
                                     discrete = FALSE), class = c("vi_options", "scalegp_options"))
  vc$batch_size <- sub$n
  res <- engine_fit(vi_engine(), sub, vc)
  comps <- lapply(res$specs, function(k) {
    k$learn_kernel <- FALSE
    k
  })
  list(comps = comps, log_noise = res$log_noise, iterations = res$iterations, converged = res$converged,
       seconds = proc.time()[["elapsed"]] - t0)
}

# `size` of the integers 1..n drawn with the fit's seed, sorted; R's random
# number stream is left as it was.
seeded_sample <- function(n, size, seed) {
  with_seed(as.integer(seed %% .Machine$integer.max), sort(sample.int(n, size)))
}

engine_collect.engine_decoupled <- function(engine, fit, res) {
  fit$elbo <- fit$objective
  fit$kl <- res$kl
  g <- fit$terms$gp[[1]]
  centred <- fit$intercept && !identical(g$spec$centre, FALSE)
  # the mean bases: locations (internal input scale), coefficients; their
  # average over the data, which a centred term hands to the intercept
  fit$state$basis <- list(A = res$basis, a = res$coef, index = res$gp_index,
                          center = if (centred) res$basis_mean else 0)
  fit$pilot <- res$pilot
  fit$discrete_values <- res$values  # the gp term's distinct values the passes over all rows used (0: rows)
  fit$mean_basis <- c(total = res$mean_basis_total, inducing = nrow(fit$state$specs[[res$gp_index]]$Z),
                      active = nrow(res$basis))
  # gradient names: the hyperparameters as for inference = "vi", then a and
  # A (the bases and inducing inputs when they still moved at the end)
  Ma <- res$mean_basis_total - fit$mean_basis[["inducing"]]
  d <- ncol(res$basis)
  moved <- isTRUE(res$learn_inducing)
  nbase <- length(fit$gradient) - Ma - if (moved) Ma * d else 0
  if (length(fit$gradient))
    names(fit$gradient) <- c(parameter_names(fit, nbase, moved), paste0("mean basis ", seq_len(Ma), ": coefficient"),
                             if (moved) paste0("mean basis ", rep(seq_len(Ma), d), ": input ", rep(seq_len(d), each = Ma)))
  fit
}

# The whitened Gaussian's prediction plus the mean bases' part k(x, A) a.
latent_predict.gpgam_decoupled <- function(fit, X, offset, terms = FALSE, se = TRUE) {
  out <- NextMethod()
  b <- fit$state$basis
  ysc <- fit$scaling$y$scale
  r <- ysc * .decoupled_mean(fit$state$specs[[b$index]], b$A, b$a, X, fit$control$threads)
  out$fit <- out$fit + r
  if (terms) out$term_fit[, b$index] <- out$term_fit[, b$index] + r - ysc * b$center
  out
}

# The term tests see the mean bases' part of the gp() term at rows X
# (internal scale of y), centred.  No null_cov: the mean does not come from
# q alone, so q's curvature does not give its covariance over repeated data
# (the tests refer to chi-squared(r), see term_tests()).
term_projection.gpgam_decoupled <- function(fit, X, ...) {
  b <- fit$state$basis
  extra <- vector("list", length(fit$terms$gp))
  extra[[b$index]] <- .decoupled_mean(fit$state$specs[[b$index]], b$A, b$a, X, fit$control$threads) - b$center
  term_projection.gpgam(fit, X, extra = extra, null_cov = FALSE)
}

# A centred term hands the data average of the mean bases' part to the intercept.
param_posterior.gpgam_decoupled <- function(fit, ...) param_posterior.gpgam(fit, shift = fit$state$basis$center)

# The weights of predict(type = "lpmatrix"): those of the whitened Gaussian
# (the covariance on the inducing points), then the mean bases' part of the
# gp() term as one more column, s (k(x, A) a - its data average when the term
# is centred), with weight 1 and no posterior variance (a fixed function of the
# fit, as an offset; its name is the term's label with ".mean").
weight_posterior.gpgam_decoupled <- function(fit, X = NULL, by_term = FALSE, ...) {
  b <- fit$state$basis
  out <- weight_posterior.gpgam(fit, X, shift = b$center, by_term = by_term)
  lab <- paste0(fit$terms$gp[[1]]$spec$label, ".mean")
  k <- length(out$coef)
  out$coef <- c(out$coef, stats::setNames(1, lab))
  V <- matrix(0, k + 1, k + 1, dimnames = list(names(out$coef), names(out$coef)))
  V[seq_len(k), seq_len(k)] <- out$vcov
  out$vcov <- V
  if (!is.null(X)) {
    r <- fit$scaling$y$scale * (.decoupled_mean(fit$state$specs[[b$index]], b$A, b$a, X, fit$control$threads) - b$center)
    out$basis <- cbind(out$basis, matrix(r, ncol = 1, dimnames = list(NULL, lab)))
    if (by_term) out$basis_term <- c(out$basis_term, 1L)
  }
  out
}

engine_label.gpgam_decoupled <- function(fit) {
  mb <- fit$mean_basis
  sprintf("%s, %d mean bases (%d inducing points + %d more), covariance on the %d inducing points, %s",
          fit$engine$label, mb[["inducing"]] + mb[["active"]], mb[["inducing"]], mb[["active"]], mb[["inducing"]],
          if (!is.null(fit$pilot))
            sprintf("kernel and noise from a pilot fit of %d rows (%d iterations), then the exact posterior on all rows",
                    fit$pilot$rows, fit$pilot$iterations)
          else if (fit$control$batch_size < fit$n) sprintf("minibatches of %d", fit$control$batch_size) else "all rows")
}

engine_notes.gpgam_decoupled <- function(fit) {
  mb <- fit$mean_basis
  c(NextMethod(),
    if (mb[["active"]] < mb[["total"]] - mb[["inducing"]])
      sprintf("only %d of the %d further mean bases were placed (the fit ended first, or too few distinct rows)",
              mb[["active"]], mb[["total"]] - mb[["inducing"]]))
}
