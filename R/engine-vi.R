# inference = "vi": the sparse variational GP (core: svgp.hpp, glue: svgp.cpp).

#' @include engine.R
NULL

#' Options of the variational engine
#'
#' Options of `gpgam(inference = "vi")`, the sparse variational GP (SVGP;
#' Hensman et al. 2013, 2015) with the coupled posterior of additive models
#' (Adam, Durrande and John 2018).  Pass them to [gp_control()] by name, e.g.
#' `gp_control(posterior = "meanfield")`; `vi_options()` validates them and
#' shows the defaults.
#'
#' Each iteration takes a natural-gradient step on the Gaussian posterior of
#' the (whitened) inducing variables.  With a Gaussian family and full
#' batches the step has size 1, which gives the optimal posterior for the
#' current hyperparameters, so the Adam steps climb the collapsed (Titsias)
#' bound; after the last iteration one more full-data natural step makes the
#' posterior exactly optimal for the final hyperparameters.
#'
#' @param natgrad_step step size of the natural-gradient update of the
#'   variational posterior; `NULL` chooses 1 (Gaussian, full batch), 0.5 (other
#'   families, full batch) or 0.1 (minibatches).  Halved after an iteration
#'   that had to be undone.
#' @param posterior `"coupled"` (default): one Gaussian posterior over the
#'   inducing variables of all components, which captures their posterior
#'   dependence (Adam, Durrande and John 2018); `"meanfield"`: independent blocks per
#'   component (Saul et al. 2016), for comparison only: its bands are too
#'   narrow when components are correlated.
#' @param rank `NULL` (default): full rank.  An integer R restricts the
#'   coupled posterior precision to the low-rank form of Adam, Durrande and
#'   John (2018, eq. 7), in whitened coordinates \eqn{S^{-1} = I + W W^\top}{S^-1 = I + W W'}
#'   with R columns in W, obtained by keeping the R leading directions after
#'   every natural-gradient step (the parametric coefficients count towards
#'   R); `summary()` warns when this discards more than 1 percent of the
#'   effective degrees of freedom.  Adam, Durrande and John used R = M, which is too
#'   small when the model needs more effective degrees of freedom than R.
#' @param optimizer with all rows per iteration: `"lbfgs"` (default), L-BFGS
#'   on the hyperparameters, inducing inputs and noise with the posterior
#'   optimal at every value, to a stationary point of the ELBO; `"adam"`, one
#'   natural-gradient step and one Adam step per iteration until the stopping
#'   rule (the scheme minibatch fits always use).
#' @param discrete with all rows per iteration, form every product over rows
#'   from the distinct values of each component's inputs after rounding, with
#'   weighted counts (the discretised covariates of Wood, Li, Shaddick and
#'   Augustin 2017 and Li and Wood 2020).  With a Gaussian family the cost of
#'   an iteration then does not depend on the number of rows after one pass
#'   over the data; with other families an iteration costs a few lookups and
#'   additions per row plus work over the distinct values, which is faster
#'   than a pass over the rows at any size.  `NA` (default): on when every
#'   `gp()` term has at most two inputs, under 1000 rows with the exact
#'   values (as `bins = Inf`: the same fit as over the rows, to rounding
#'   error); with a term of three or more inputs, on from 5000 rows;
#'   `TRUE`, `FALSE`: always, never.  Minibatch fits use the rows.
#' @param bins the number of equally spaced values over its range that each
#'   input of a one-input `gp()` term is rounded to when `discrete` is on
#'   (a term over d inputs: `max(100, ceiling(bins^(1/d)))` per input);
#'   `Inf` keeps the exact values (rows are grouped by equal inputs only, and
#'   the fit equals that of the rows).  Factors, parametric terms and `by`
#'   variables are never rounded.  Fitted values are at the rows' own inputs:
#'   a term over one or two rounded inputs is interpolated (cubic) from its
#'   rounding grid, other terms are evaluated at the rows; binomial and
#'   Poisson fits take the latent variance behind `fitted()` at the rounded
#'   inputs.
#' @param learn_inducing whether the fit moves the inducing inputs (they
#'   start at k-means centres of the data): `TRUE`, `FALSE`, or a number of
#'   iterations of a full-data fit during which they move, after which the
#'   fit goes on with them fixed (and its convergence concerns the other
#'   parameters).  `NULL` (default): not when every GP term has at most two
#'   inputs (there k-means centres cover the inputs well, and moving them
#'   changes predictions little and costs time; `bench/README.md` in the
#'   source repository compares both); otherwise in the first 200 iterations
#'   of a full-data fit (with more inputs, fixed k-means centres can predict
#'   much worse, and most of the gain comes early) and throughout a minibatch
#'   fit.  `gp_control(fixed = "inducing")` fixes them in every case.
#' @param cluster a cluster made by [parallel::makeCluster()] (PSOCK workers on
#'   this or other hosts, or MPI through snow) on which the rows are held in
#'   shards.  Gaussian family: while the discretised sums are formed, each
#'   worker finds the distinct values of its rows and returns its weighted
#'   counts by value and by pair of values (at most the number of distinct
#'   value pairs per group of rows), which add up exactly; the fit then runs
#'   on the master, whose iterations do not touch the rows.  Other families:
#'   the master discretises the rows, and in every evaluation each worker
#'   takes the latent moments by value and by observed pair of values, passes
#'   over its rows and returns its sums of the likelihood's derivatives by
#'   value and by observed pair per group of rows.  The fit is identical to
#'   the one in a single process.  All rows per iteration and discretised
#'   covariates only.  The workers need scalegp installed.
#' @param cycles `family = gaulss()` only: the largest number of
#'   alternations between the mean and the log-sd fits, at least 2 (see
#'   [gaulss]).
#' @return A list of the options.
#' @references Hensman, Fusi and Lawrence (2013) Gaussian processes for big
#'   data. UAI.  Hensman, Matthews and Ghahramani (2015) Scalable variational
#'   Gaussian process classification. AISTATS.  Adam, Durrande and John
#'   (2018) Scalable GAM using sparse variational Gaussian processes. 1st
#'   Symposium on Advances in Approximate Bayesian Inference.  Saul, Hensman,
#'   Vehtari and Lawrence (2016) Chained Gaussian processes. AISTATS.
#' @seealso [gp_control()], [ep_options()]
#' @examples
#' vi_options()
#' gp_control(posterior = "meanfield", natgrad_step = 0.5)
#' @export
vi_options <- function(natgrad_step = NULL, posterior = c("coupled", "meanfield"), rank = NULL,
                       optimizer = c("lbfgs", "adam"), discrete = NA, bins = 1000, learn_inducing = NULL,
                       cluster = NULL, cycles = 50) {
  if (!is.null(natgrad_step)) {
    check_positive(natgrad_step, "natgrad_step")
    if (natgrad_step > 1) stop_arg("natgrad_step", "must be in (0, 1]")
  }
  posterior <- check_choice(posterior, "posterior", eval(formals(vi_options)$posterior))
  if (!is.null(rank)) check_count(rank, "rank")
  optimizer <- check_choice(optimizer, "optimizer", eval(formals(vi_options)$optimizer))
  if (!is.logical(discrete) || length(discrete) != 1L)
    stop_arg("discrete", "must be TRUE, FALSE or NA")
  if (!is.numeric(bins) || length(bins) != 1L || is.na(bins) || bins < 2)
    stop_arg("bins", "must be a number >= 2 (Inf: no rounding)")
  if (!is.null(learn_inducing) &&
      (!(is.logical(learn_inducing) || is.numeric(learn_inducing)) || length(learn_inducing) != 1L ||
       is.na(learn_inducing) || learn_inducing < 0))
    stop_arg("learn_inducing", "must be TRUE, FALSE, NULL or a number of iterations >= 0")
  if (is.numeric(learn_inducing)) learn_inducing <- if (is.finite(learn_inducing)) round(learn_inducing) else TRUE
  check_cluster(cluster)
  check_count(cycles, "cycles")
  if (cycles < 2) stop_arg("cycles", "must be at least 2 (convergence is judged by the change over a cycle), not ", cycles)
  list(natgrad_step = natgrad_step, posterior = posterior, rank = if (!is.null(rank)) as.integer(rank),
       optimizer = optimizer, discrete = discrete, bins = bins, learn_inducing = learn_inducing, cluster = cluster,
       cycles = as.integer(cycles))
}

vi_engine <- function() {
  new_engine("vi", label = "sparse variational GP", objective = "ELBO",
             objective_note = "a lower bound on the log marginal likelihood", options = vi_options)
}

register_engine("vi", vi_engine)

# Whether a fit of `setup` under `control` uses discretised covariates
# (vi_options(discrete = NA): all rows per iteration, and GP terms of at
# most two inputs each (under 1000 rows with exact values,
# vi_discrete_exact()), n >= 5000, or a cluster).  The pass by distinct
# values is the faster one at any size (bench/discrete_small.R: gamSim(1)
# fits of 500-4000 rows 1.3-4.6 times faster than over the rows with a
# Gaussian family, 1.8-3.0 times faster than over the exact values from
# 2000 rows with binomial and Poisson ones, the hold-out NLPD equal to 1e-4);
# a term of three or more inputs has about as many distinct rounded values
# as rows under 5000 rows.
vi_discrete <- function(setup, control) {
  control$batch_size >= setup$n && !isFALSE(control$options$discrete) &&
    (isTRUE(control$options$discrete) || setup$n >= 5000 || max_gp_inputs(setup) <= 2L ||
       !is.null(control$options$cluster))
}

# Whether a discretised fit keeps the exact values (bins = Inf; the same fit
# as over the rows, to rounding error): by default under 1000 rows, whose
# inputs have fewer distinct values than the default bins anyway.
vi_discrete_exact <- function(setup, control) {
  is.na(control$options$discrete %||% NA) && setup$n < 1000 && is.null(control$options$cluster) &&
    max_gp_inputs(setup) <= 2L
}

# The largest number of inputs of one GP component of `setup` (0: none).
max_gp_inputs <- function(setup) {
  d <- vapply(setup$comps, function(k) if (k$kind %in% c("stationary", "centred")) length(k$cols) else 0L, 1L)
  max(0L, d)
}

# The iterations during which a fit moves the inducing inputs (Inf: all,
# 0: none); see vi_options(learn_inducing).
vi_inducing_iterations <- function(setup, control) {
  li <- control$options$learn_inducing
  if ("inducing" %in% control$fixed || isFALSE(li)) return(0)
  if (isTRUE(li)) return(Inf)
  if (is.numeric(li)) return(li)
  if (max_gp_inputs(setup) <= 2L) 0 else 200
}

# The options the C++ core reads (src/svgp.cpp), from the engine's options.
vi_core_options <- function(control, setup) {
  o <- control$options
  list(natgrad_step = o$natgrad_step %||% -1, meanfield = o$posterior == "meanfield", rank = o$rank %||% 0L,
       lbfgs = o$optimizer == "lbfgs", discrete = vi_discrete(setup, control),
       bins = if (vi_discrete_exact(setup, control) || !is.finite(o$bins %||% 1000)) 0 else o$bins %||% 1000)
}

engine_fit.engine_vi <- function(engine, setup, control) {
  settings <- common_settings(control)
  moves <- vi_inducing_iterations(setup, control)
  settings$learn_inducing <- moves > 0
  settings$inducing_iterations <- if (is.finite(moves)) as.integer(moves) else -1L
  # the Gamma shape, the negative binomial theta, the scaled t's scale and
  # df: estimated unless the family gives them
  if (setup$lik %in% c("gamma", "negbin", "scat")) settings$learn_noise <- learns_lik_param(setup, control)
  settings <- c(settings, lik_df_settings(setup))
  options <- vi_core_options(control, setup)
  shards <- remote <- NULL
  if (!is.null(control$options$cluster)) {
    check_vi_cluster(setup, control)
    if (setup$lik == "gaussian") {
      shards <- vi_cluster_sums(control$options$cluster, setup, options$bins)
    } else {
      h <- cluster_open(control$options$cluster, setup, worker_init)
      on.exit(cluster_close(h))
      remote <- vi_cluster_rows(h, setup, control)
    }
  }
  res <- .svgp_fit(setup$X, setup$y, setup$w, setup$offset, setup$comps, setup$lik, setup$log_noise,
                   settings, options, control$threads, control$seed,
                   progress_monitor(control, engine$objective, objective_shift(setup)), shards, remote,
                   setup$offset_raw / setup$yscaling$scale)
  res$distributed <- if (!is.null(control$options$cluster)) length(control$options$cluster)
  res$bins <- options$bins  # 0: exact values
  res
}

# ---- the discretised sums over the shards of a cluster (cluster.R) ------------------
# Each worker returns the distinct values of its rows (exact, then rounded
# over the ranges of all rows where the exact values are too many), then,
# given the values of all shards, its sums by value and pair of values per
# group of rows; .svgp_fit() adds the group sums in order (svgp.cpp).

check_vi_cluster <- function(setup, control) {
  if (control$batch_size < setup$n)
    stop_arg("cluster", "works with all rows per iteration; leave 'batch_size' unset (or set it to the number of rows)")
  if (isFALSE(control$options$discrete))
    stop_arg("cluster", "works with discretised covariates; leave 'discrete' unset")
}

vi_cluster_sums <- function(cl, setup, bins) {
  h <- cluster_open(cl, setup, worker_init)
  on.exit(cluster_close(h))
  specs <- setup$comps
  m <- .discrete_merge(specs, bins, list(),
                       cluster_run(h, vi_worker_values, specs, bins, list(), what = "find its distinct values"))
  if (m$again)
    m <- .discrete_merge(specs, bins, m$round,
                         cluster_run(h, vi_worker_values, specs, bins, m$round, what = "find its distinct values"))
  sums <- cluster_run(h, vi_worker_sums, specs, bins, m$round, m$values, what = "sum its rows")
  list(round = m$round, values = m$values, bins = bins, sums = unlist(sums, recursive = FALSE))
}

# Other likelihoods: the master discretises the rows (as in one process) and
# runs the fit; the pass over the rows of every evaluation runs on the
# workers, each over its whole groups of rows: remote("init", keys, C) gives
# them their rows' keys (values and observed value pairs, svgp.hpp RowKeys),
# remote("rows", parts, stats, gradient) the parts of the rows' latent
# moments, and returns the sums of all groups in order.
vi_cluster_rows <- function(h, setup, control) {
  function(kind, a, b, c) {
    if (kind == "init") {
      slices <- lapply(h$rows, function(r) lapply(a, function(k) k[r]))
      cluster_try(parallel::clusterApply(h$cl, slices, vi_worker_keys, key = h$key, C = b), "index its rows")
      return(NULL)
    }
    unlist(cluster_run(h, vi_worker_rows, a, b, c, setup$lik, control$gh_points, what = "sum its rows"),
           recursive = FALSE)
  }
}

vi_worker_keys <- function(keys, key, C) {
  s <- worker_shard(key)
  s$keys <- keys
  s$C <- C
  s$index <- .discrete_row_index(keys, C, s$bounds)
  assign(key, s, envir = worker_store)
  TRUE
}

vi_worker_rows <- function(key, parts, stats, gradient, family, gh_points) {
  s <- worker_shard(key)
  .discrete_row_sums(s$y, s$w, s$offset, s$keys, s$C, s$index, s$bounds, family, gh_points, parts, stats,
                     gradient, 1L)
}

vi_worker_values <- function(key, specs, bins, round) {
  s <- worker_shard(key)
  .discrete_shard_values(s$X, specs, bins, round)
}

vi_worker_sums <- function(key, specs, bins, round, values) {
  s <- worker_shard(key)
  .discrete_shard_sums(s$X, s$y, s$w, s$offset, specs, bins, round, values, s$bounds)
}

# A fit with discretised covariates costs little per row: all rows.
default_batch_size.engine_vi <- function(engine, n, family, opts) {
  if (!isFALSE(opts$discrete)) n else NextMethod()
}

engine_collect.engine_vi <- function(engine, fit, res) {
  fit$elbo <- fit$objective
  fit$kl <- res$kl
  fit$rank_loss <- res$rank_loss
  fit$discrete <- isTRUE(res$discrete)
  fit$discrete_bins <- if (fit$discrete) res$bins  # values per input it rounded to (0: exact values)
  fit$passes <- res$passes  # passes over the data (rows or values) in the fit
  # a Gaussian fit without inducing points (fixed bases: Hilbert, factor and
  # linear terms) has no variational gap: say so where the objective is named
  fit$fixed_design <- isTRUE(res$exact_objective)
  if (fit$fixed_design)
    fit$engine$objective_note <- "here the log marginal likelihood itself: a Gaussian fit on fixed bases, no inducing points"
  fit$control$distributed <- res$distributed
  fit
}

# (a Gaussian fit on fixed bases, fit$fixed_design: its posterior is the
# exact Gaussian one on those bases, not a variational approximation)
engine_label.gpgam_vi <- function(fit) {
  paste0(if (isTRUE(fit$fixed_design)) "exact Gaussian posterior on fixed bases"
         else paste0(fit$engine$label, ", ",
                     if (!is.null(fit$control$options$rank)) sprintf("coupled posterior of rank %d", fit$control$options$rank)
                     else paste(fit$control$options$posterior, "posterior")),
         if (isTRUE(fit$discrete))
           if (isTRUE(fit$discrete_bins == 0)) ", passes over distinct covariate values (exact)"
           else sprintf(", discretised covariates (bins = %s)", format(fit$discrete_bins %||% fit$control$options$bins)),
         if (!is.null(fit$control$distributed)) paste0(", sums over ", fit$control$distributed, " workers"))
}

engine_notes.gpgam_vi <- function(fit) {
  c(NextMethod(),
    if (isTRUE(fit$rank_loss > 0.01))
      sprintf("the rank restriction (rank = %d) discards %.1f%% of the effective degrees of freedom; increase 'rank'",
              fit$control$options$rank, 100 * fit$rank_loss))
}
