# The expectation-propagation engine (seed 001): checks what it supports,
# calls the C++ core in this process or drives a distributed fit whose data
# shards live on the workers of a parallel cluster.

# EP's site updates are closed-form for the probit likelihood of 0/1 data.
check_ep_problem <- function(problem, control) {
  if (problem$lik != "probit")
    stop_arg("family", "must be binomial(link = \"probit\") with inference = \"ep\" (EP site updates are ",
             "closed-form for the probit likelihood only); use inference = \"vi\" for ",
             problem$family$family, "(link = \"", problem$family$link, "\")")
  if (any(problem$y != 0 & problem$y != 1))
    stop_arg("y", "must be 0/1, logical or a two-level factor with inference = \"ep\" (proportions are not supported)")
  if (any(problem$w != 1))
    stop_arg("weights", "must all be 1 with inference = \"ep\"; use inference = \"vi\" for weighted data")
  if (!is.null(control$cluster) && control$batch_size < problem$n)
    stop_arg("cluster", "works with batch EP; leave 'batch_size' unset (or set it to the number of rows)")
  if (!identical(control$posterior, "coupled") || !is.null(control$rank))
    stop_arg("control", "'posterior' and 'rank' are options of inference = \"vi\"")
}

run_ep <- function(problem, control) {
  check_ep_problem(problem, control)
  ctl <- engine_control(control, problem)
  remote <- NULL
  if (!is.null(control$cluster)) {
    remote <- ep_cluster_start(control$cluster, problem, ctl)
    on.exit(ep_cluster_stop(control$cluster, attr(remote, "key")), add = TRUE)
  }
  X <- if (is.null(remote)) problem$X else problem$X[0, , drop = FALSE]
  v <- if (is.null(remote)) problem$y else numeric()
  .ep_fit(X, v, if (is.null(remote)) problem$w else numeric(), if (is.null(remote)) problem$offset else numeric(),
          problem$comps, ctl, control$threads, control$seed, progress_monitor(control, "log evidence"),
          remote, problem$n)
}

# ---- distributed EP --------------------------------------------------------------
# The rows are cut into the same fixed groups as a pass in one process
# (.group_bounds); each worker holds whole consecutive groups, computes one
# accumulator per group and the master adds them in group order, so the fit
# is identical to the one in one process.  Per pass, a worker receives the
# hyperparameters and q (O(M^2)) and returns O(M^2) numbers per group.

# Registry of the shards held by this R process when it is a worker (and, on
# the master, the count of distributed fits, which makes their keys unique).
worker_store <- new.env(parent = emptyenv())

ep_cluster_start <- function(cl, problem, ctl) {
  b <- .group_bounds(problem$n)
  G <- length(b) - 1L
  K <- min(length(cl), G)
  cl <- cl[seq_len(K)]
  owner <- split(seq_len(G), rep(seq_len(K), diff(round(seq(0, G, length.out = K + 1)))))
  shards <- lapply(owner, function(gs) {
    rows <- (b[gs[1]] + 1):b[gs[length(gs)] + 1L]
    list(X = problem$X[rows, , drop = FALSE], y = problem$y[rows], w = problem$w[rows],
         offset = problem$offset[rows], bounds = b[c(gs, gs[length(gs)] + 1L)] - b[gs[1]])
  })
  worker_store$.fits <- (worker_store$.fits %||% 0) + 1
  key <- paste0("ep", Sys.getpid(), "_", worker_store$.fits)
  # (a base function: a closure defined here would carry this frame, data and all, to the workers)
  ok <- cluster_try(parallel::clusterCall(cl, base::requireNamespace, "scalegp", quietly = TRUE), "start")
  if (!all(unlist(ok)))
    stop_arg("cluster", "has workers where the scalegp package cannot be loaded; install it there first")
  cluster_try(parallel::clusterApply(cl, shards, ep_worker_init, key = key, control = ctl), "receive its shard")
  remote <- function(kind, rho, sites, state) {
    res <- cluster_try(parallel::clusterCall(cl, ep_worker_pass, key, kind, rho, sites, state), "run an EP pass")
    unlist(res, recursive = FALSE)
  }
  attr(remote, "key") <- key
  remote
}

ep_cluster_stop <- function(cl, key) {
  try(parallel::clusterCall(cl, ep_worker_stop, key), silent = TRUE)
  invisible()
}

cluster_try <- function(expr, what) {
  tryCatch(expr, error = function(e)
    stop("distributed EP: a worker of 'cluster' failed to ", what, ": ", conditionMessage(e), call. = FALSE))
}

ep_worker_init <- function(shard, key, control) {
  n <- length(shard$y)
  shard$control <- control
  shard$sites <- rep(list(numeric(n)), 6)
  assign(key, shard, envir = worker_store)
  TRUE
}

ep_worker_pass <- function(key, kind, rho, sites, state) {
  s <- get0(key, envir = worker_store, inherits = FALSE)
  if (is.null(s)) stop("this worker holds no shard '", key, "' (was it restarted?)")
  res <- .ep_shard_pass(s$X, s$y, s$w, s$offset, s$control, s$sites, s$bounds, kind, rho, sites, state, 1L)
  s$sites <- res$sites
  assign(key, s, envir = worker_store)
  res$groups
}

ep_worker_stop <- function(key) {
  if (exists(key, envir = worker_store, inherits = FALSE)) rm(list = key, envir = worker_store)
  TRUE
}
