# Fits over the workers of a parallel cluster (gp_control(cluster = )): the
# rows are cut into the fixed groups of a pass (.group_bounds(), which do not
# depend on the number of workers or threads); each worker holds whole
# consecutive groups (its shard), and the master combines what the workers
# return per group in group order, so a fit equals the one in one process.
# Used by batch EP (engine-ep.R) and the variational engine (engine-vi.R).

# Registry of the shards held by this R process when it is a worker (and, on
# the master, the count of distributed fits, which makes their keys unique).
worker_store <- new.env(parent = emptyenv())

check_cluster <- function(cluster) {
  if (!is.null(cluster) && !inherits(cluster, "cluster"))
    stop_arg("cluster", "must be a cluster made by parallel::makeCluster()")
  invisible(cluster)
}

# Sends the shards of `setup` to the workers of `cl`, where `init(shard, key,
# ...)` stores them; a handle for cluster_run() and cluster_close() (`rows`:
# each worker's rows).
cluster_open <- function(cl, setup, init, ...) {
  b <- .group_bounds(setup$n)
  G <- length(b) - 1L
  K <- min(length(cl), G)
  cl <- cl[seq_len(K)]
  owner <- split(seq_len(G), rep(seq_len(K), diff(round(seq(0, G, length.out = K + 1)))))
  rows <- lapply(owner, function(gs) (b[gs[1]] + 1):b[gs[length(gs)] + 1L])
  shards <- Map(function(gs, r) {
    list(X = setup$X[r, , drop = FALSE], y = setup$y[r], w = setup$w[r],
         offset = setup$offset[r], bounds = b[c(gs, gs[length(gs)] + 1L)] - b[gs[1]])
  }, owner, rows)
  worker_store$.fits <- (worker_store$.fits %||% 0) + 1
  key <- paste0("fit", Sys.getpid(), "_", worker_store$.fits)
  # (a base function: a closure defined here would carry this frame, data and all, to the workers)
  ok <- cluster_try(parallel::clusterCall(cl, base::requireNamespace, "scalegp", quietly = TRUE), "start")
  if (!all(unlist(ok)))
    stop_arg("cluster", "has workers where the scalegp package cannot be loaded; install it there first")
  cluster_try(parallel::clusterApply(cl, shards, init, key = key, ...), "receive its shard")
  list(cl = cl, key = key, rows = unname(rows))
}

# fun(key, ...) on every worker of the handle; the results in shard order.
cluster_run <- function(h, fun, ..., what) {
  cluster_try(parallel::clusterCall(h$cl, fun, h$key, ...), what)
}

cluster_close <- function(h) {
  try(parallel::clusterCall(h$cl, worker_drop, h$key), silent = TRUE)
  invisible()
}

cluster_try <- function(expr, what) {
  tryCatch(expr, error = function(e)
    stop("distributed fit: a worker of 'cluster' failed to ", what, ": ", conditionMessage(e), call. = FALSE))
}

# ---- on the workers ----
worker_init <- function(shard, key) {
  assign(key, shard, envir = worker_store)
  TRUE
}

worker_shard <- function(key) {
  s <- get0(key, envir = worker_store, inherits = FALSE)
  if (is.null(s)) stop("this worker holds no shard '", key, "' (was it restarted?)")
  s
}

worker_drop <- function(key) {
  if (exists(key, envir = worker_store, inherits = FALSE)) rm(list = key, envir = worker_store)
  TRUE
}
