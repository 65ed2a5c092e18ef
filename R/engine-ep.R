# inference = "ep": expectation propagation for probit classification (core:
# ep.hpp, glue: ep.cpp).  Checks what it supports, calls the C++ core in this
# process or drives a distributed fit whose data shards live on the workers
# of a parallel cluster.

#' @include engine.R engine-vi.R
NULL

#' Options of the expectation-propagation engine
#'
#' Options of `gpgam(inference = "ep")`, expectation propagation for GP
#' classification with a probit likelihood (Hernandez-Lobato and
#' Hernandez-Lobato 2016).  Pass them to [gp_control()] by name, e.g.
#' `gp_control(damping = 0.7)`; `ep_options()` validates them and shows the
#' defaults.
#'
#' @param damping damping of the site updates (1 = none).  `NULL`: batch EP
#'   fitted by L-BFGS (the default) refits the sites at each step undamped,
#'   and damps them only when successive sweeps oscillate (where the sweeps
#'   end does not depend on the damping, only how fast they get there); the
#'   paper's schemes use its values, 0.5 for batch EP with
#'   `optimizer = "adam"` and 0.99 for minibatch EP.  A given value is used
#'   throughout.  Halved after an iteration that had to be undone.
#' @param sites with minibatches (`batch_size` below the number of rows):
#'   `"separate"` (default; one site per row, as in the paper; O(N) memory
#'   for the site scalars) or `"tied"` (one site shared by all rows,
#'   stochastic EP of Li et al. 2015; O(M^2) memory; a slightly different
#'   fixed point).
#' @param optimizer how batch EP moves the hyperparameters: `"lbfgs"`
#'   (default) by L-BFGS on the EP log evidence, with the sites run to their
#'   fixed point (damped parallel sweeps until no site moves by more than
#'   1e-8) at every value, where the evidence's gradient is exact; the fit
#'   ends at a stationary point.  `"adam"`: the paper's "inner" scheme, one
#'   damped sweep and one Adam step per iteration (`learning_rate`), which
#'   stops by the stopping rule of [gp_control()].  Minibatch EP always uses
#'   the latter, with its minibatch updates.
#' @param learn_inducing `FALSE` (default): the inducing inputs stay at their
#'   k-means positions.  The EP (FITC) evidence is not a bound: moving the
#'   inducing inputs to raise it can overfit (Bauer, van der Wilk and
#'   Rasmussen 2016): freeing them raises the evidence but can worsen held-out
#'   predictions, and takes many more iterations.  `TRUE` learns them, as the
#'   paper does.  (A
#'   number of iterations, which [vi_options()] accepts, counts here as `TRUE`
#'   when positive: EP moves them throughout or never.)
#' @param cluster a cluster made by [parallel::makeCluster()] (PSOCK workers on
#'   this or other hosts, or MPI through snow) on which the data are held in
#'   shards for distributed batch EP.  Each iteration sends the
#'   hyperparameters and the posterior (O(M^2) numbers) to every worker and
#'   gets back O(M^2) sums per group of rows; the fit is identical to the one
#'   in a single process.  The workers need scalegp installed and use one
#'   thread each.
#' @return A list of the options.
#' @references Hernandez-Lobato and Hernandez-Lobato (2016) Scalable Gaussian
#'   process classification via expectation propagation. AISTATS.  Bauer, van
#'   der Wilk and Rasmussen (2016) Understanding probabilistic sparse Gaussian
#'   process approximations. NeurIPS.  Li,
#'   Hernandez-Lobato and Turner (2015) Stochastic expectation propagation.
#'   NeurIPS.
#' @seealso [gp_control()], [vi_options()]
#' @examples
#' ep_options()
#' gp_control(batch_size = 500, sites = "tied")
#' @export
ep_options <- function(damping = NULL, sites = c("separate", "tied"), optimizer = c("lbfgs", "adam"),
                       learn_inducing = FALSE, cluster = NULL) {
  if (!is.null(damping)) {
    check_positive(damping, "damping")
    if (damping > 1) stop_arg("damping", "must be in (0, 1]")
  }
  sites <- check_choice(sites, "sites", eval(formals(ep_options)$sites))
  optimizer <- check_choice(optimizer, "optimizer", eval(formals(ep_options)$optimizer))
  if (!(is.logical(learn_inducing) || is.numeric(learn_inducing)) || length(learn_inducing) != 1 ||
      is.na(learn_inducing) || learn_inducing < 0)
    stop_arg("learn_inducing", "must be TRUE, FALSE or a number of iterations >= 0")
  check_cluster(cluster)
  list(damping = damping, sites = sites, optimizer = optimizer, learn_inducing = learn_inducing, cluster = cluster)
}

ep_engine <- function() {
  new_engine("ep", label = "expectation propagation", objective = "EP log evidence",
             objective_note = "the EP approximation of the log marginal likelihood", options = ep_options)
}

register_engine("ep", ep_engine)

# The options the C++ core reads (src/ep.cpp: ep_settings_from()), from the engine's options.
ep_core_options <- function(control) {
  o <- control$options
  list(damping = o$damping %||% -1, tied = identical(o$sites, "tied"), inner = identical(o$optimizer, "adam"))
}

# EP's site updates are closed-form for the probit likelihood of 0/1 data.
check_ep_setup <- function(setup, control) {
  if (setup$lik != "probit")
    stop_arg("family", "must be binomial(link = \"probit\") with inference = \"ep\" (EP site updates are ",
             "closed-form for the probit likelihood only); use inference = \"vi\" for ",
             setup$family$family, "(link = \"", setup$family$link, "\")")
  if (any(setup$y != 0 & setup$y != 1))
    stop_arg(setup$yname, "must be 0/1, logical or a two-level factor with inference = \"ep\" ",
             "(proportions are not supported)")
  if (any(setup$w != 1))
    stop_arg("weights", "must all be 1 with inference = \"ep\"; use inference = \"vi\" for weighted data")
  if (!is.null(control$options$cluster) && control$batch_size < setup$n)
    stop_arg("cluster", "works with batch EP; leave 'batch_size' unset (or set it to the number of rows)")
}

engine_fit.engine_ep <- function(engine, setup, control) {
  check_ep_setup(setup, control)
  settings <- common_settings(control)
  settings$learn_inducing <- settings$learn_inducing && isTRUE(control$options$learn_inducing > 0)
  options <- ep_core_options(control)
  remote <- NULL
  if (!is.null(control$options$cluster)) {
    remote <- ep_cluster_start(control$options$cluster, setup, settings, options)
    on.exit(cluster_close(attr(remote, "handle")), add = TRUE)
  }
  local <- is.null(remote)
  res <- .ep_fit(if (local) setup$X else setup$X[0, , drop = FALSE], if (local) setup$y else numeric(),
                 if (local) setup$w else numeric(), if (local) setup$offset else numeric(), setup$comps, settings,
                 options, control$threads, control$seed, progress_monitor(control, engine$objective), remote,
                 setup$n, if (local) setup$offset_raw / setup$yscaling$scale)
  res$distributed <- if (!local) length(control$options$cluster)
  # (minibatch EP updates its sites batch by batch, with no converged sweep whose change could be reported)
  if (control$batch_size < setup$n) res$q_change <- NULL
  res
}

engine_collect.engine_ep <- function(engine, fit, res) {
  fit$evidence <- fit$objective
  fit$control$distributed <- res$distributed
  fit
}

engine_label.gpgam_ep <- function(fit) {
  paste0(fit$engine$label, ", ",
         if (!is.null(fit$control$distributed)) paste0("distributed over ", fit$control$distributed, " workers")
         else if (fit$control$batch_size < fit$n)
           paste0("minibatches", if (identical(fit$control$options$sites, "tied")) ", tied sites")
         else paste0("batch", if (identical(fit$control$options$optimizer, "adam")) ", Adam steps on the hyperparameters"))
}

# ---- distributed EP --------------------------------------------------------------
# Each worker holds whole groups of rows (cluster.R), computes one
# accumulator per group and the master adds them in group order, so the fit
# is identical to the one in one process.  Per pass, a worker receives the
# hyperparameters and q (O(M^2)) and returns O(M^2) numbers per group.

ep_cluster_start <- function(cl, setup, settings, options) {
  h <- cluster_open(cl, setup, ep_worker_init, settings = settings, options = options)
  remote <- function(kind, rho, sites, state)
    unlist(cluster_run(h, ep_worker_pass, kind, rho, sites, state, what = "run an EP pass"), recursive = FALSE)
  attr(remote, "handle") <- h
  remote
}

ep_worker_init <- function(shard, key, settings, options) {
  n <- length(shard$y)
  shard$settings <- settings
  shard$options <- options
  shard$sites <- rep(list(numeric(n)), 8)
  assign(key, shard, envir = worker_store)
  TRUE
}

ep_worker_pass <- function(key, kind, rho, sites, state) {
  s <- worker_shard(key)
  res <- .ep_shard_pass(s$X, s$y, s$w, s$offset, s$settings, s$options, s$sites, s$bounds, kind, rho, sites, state, 1L)
  s$sites <- res$sites
  assign(key, s, envir = worker_store)
  res$groups
}
