#' Control settings for gpgam fits
#'
#' All optimisation knobs of [gpgam()] in one validated object.
#'
#' The variational engine alternates two updates per iteration: a natural-gradient
#' step on the Gaussian posterior of the (whitened) inducing variables, and an
#' Adam step on the kernel hyperparameters, the inducing inputs and the noise
#' variance.  With a Gaussian family and full batches the natural step has size
#' 1, which gives the optimal posterior for the current hyperparameters, so the
#' Adam steps climb the collapsed (Titsias) bound; after the last iteration one
#' more full-data natural step makes the posterior exactly optimal for the final
#' hyperparameters.  Minibatches are drawn without replacement within an epoch.
#'
#' @param inducing default number of inducing points of a `gp()` term that does
#'   not set its own `k`; `NULL` uses 20 for a term over one input, 64 for two
#'   and 100 for more.  Reduced (with a warning when it was asked for) to the
#'   number of unique input rows when that is smaller.
#' @param batch_size rows per minibatch; `NULL` uses all rows when there are at
#'   most 20000 and minibatches of 2000 otherwise.
#' @param iterations maximum number of iterations (optimisation steps).
#' @param epochs alternative to `iterations`: the maximum number of passes
#'   through the data (`iterations` is then `ceiling(epochs * n / batch_size)`).
#' @param learning_rate Adam step size for hyperparameters and inducing inputs
#'   (on the internal, standardised, log scale), for both engines.
#' @param tol,patience the fit stops when the ELBO (or, for EP, the log
#'   evidence; per observation, averaged over an epoch) has not improved by
#'   more than `tol` for `patience` consecutive epochs.  EP with all
#'   hyperparameters fixed stops when no site changes by more than 1e-8.
#' @param natgrad_step step size of the natural-gradient update of the
#'   variational posterior; `NULL` chooses 1 (Gaussian, full batch), 0.5 (other
#'   families, full batch) or 0.1 (minibatches).
#' @param threads number of threads; `NULL` uses all cores
#'   ([RcppParallel::defaultNumThreads()]).  Results do not depend on it.
#' @param seed integer seed of the C++ random generator (minibatches,
#'   k-means); `NULL` draws one from R's generator, so [set.seed()] makes fits
#'   reproducible.
#' @param verbose show a progress bar.
#' @param fixed parameters kept at their initial values: any of `"kernel"`
#'   (lengthscales and variances, see the `lengthscale` and `variance`
#'   arguments of [gp()]), `"inducing"` (inducing inputs) and `"sigma"` (the
#'   Gaussian noise sd).
#' @param sigma initial (or, with `fixed = "sigma"`, fixed) residual standard
#'   deviation of a Gaussian model on the scale of the response; `NULL` uses
#'   `sd(y) / 3`.
#' @param jitter relative jitter added to inducing-point covariances
#'   (`jitter * mean(diag(K))`), multiplied by 10 up to three times when a
#'   Cholesky factorisation fails.
#' @param gh_points number of Gauss-Hermite nodes for expectations without a
#'   closed form (binomial).
#' @param posterior `"coupled"` (default): one Gaussian posterior over the
#'   inducing variables of all components, which captures their posterior
#'   dependence (seed 004); `"meanfield"`: independent blocks per component
#'   (Saul et al. 2016), for comparison only, its bands are too narrow.
#' @param rank `NULL` (default): full rank.  An integer R restricts the
#'   coupled posterior precision to the low-rank form of seed 004 (eq. 7,
#'   whitened: \eqn{S^{-1} = I + W W^	op}, W with R columns), obtained by
#'   keeping the R leading directions after every natural-gradient step (the
#'   parametric coefficients count towards R); `summary()` warns when this
#'   discards more than 1% of the effective degrees of freedom.
#'   Seed 004 used R = M, which is too small when the model needs more
#'   effective degrees of freedom than R.
#' @param damping EP only: damping of the site updates (1 = none); `NULL`
#'   uses 0.5 for batch EP and 0.99 for minibatch EP (the paper's values).
#'   Halved automatically after an update that fails or gives a non-finite
#'   evidence.
#' @param sites EP only, with minibatches: `"separate"` (default; one site per
#'   row, as in the paper; O(N) memory for the site scalars) or `"tied"` (one
#'   site shared by all rows, Li et al. 2015; O(M^2) memory; a slightly
#'   different fixed point).
#' @param cluster EP only: a cluster made by [parallel::makeCluster()] (PSOCK
#'   workers on this or other hosts, or MPI through snow) on which the data are
#'   held in shards for distributed batch EP.  Each iteration sends the
#'   hyperparameters and the posterior (O(M^2) numbers) to every worker and
#'   gets back O(M^2) sums per group of rows; the fit is identical to the one
#'   in a single process.  The workers need scalegp installed and use one
#'   thread each.
#' @return An object of class `gp_control`.
#' @seealso [gpgam()]
#' @examples
#' gp_control(inducing = 50, iterations = 500)
#' gp_control(batch_size = 1000, epochs = 20, threads = 1, seed = 1)
#' @export
gp_control <- function(inducing = NULL, batch_size = NULL, iterations = 2000, epochs = NULL,
                       learning_rate = 0.01, tol = 1e-5, patience = 20, natgrad_step = NULL,
                       threads = NULL, seed = NULL, verbose = interactive(),
                       fixed = character(), sigma = NULL, jitter = 1e-6, gh_points = 20,
                       posterior = c("coupled", "meanfield"), rank = NULL, damping = NULL,
                       sites = c("separate", "tied"), cluster = NULL) {
  if (!is.null(inducing)) check_count(inducing, "inducing")
  if (!is.null(batch_size)) check_count(batch_size, "batch_size")
  check_count(iterations, "iterations")
  if (!is.null(epochs)) check_positive(epochs, "epochs")
  check_positive(learning_rate, "learning_rate")
  if (learning_rate > 10) stop_arg("learning_rate", "is absurdly large (", learning_rate, "); try 0.01")
  check_positive(tol, "tol")
  check_count(patience, "patience")
  if (!is.null(natgrad_step)) {
    check_positive(natgrad_step, "natgrad_step")
    if (natgrad_step > 1) stop_arg("natgrad_step", "must be in (0, 1]")
  }
  if (!is.null(threads)) check_count(threads, "threads")
  if (!is.null(seed)) check_count(seed, "seed", zero = TRUE)
  if (!is.logical(verbose) || length(verbose) != 1 || is.na(verbose))
    stop_arg("verbose", "must be TRUE or FALSE")
  if (!is.character(fixed) || !all(fixed %in% c("kernel", "inducing", "sigma")))
    stop_arg("fixed", "must be a subset of c(\"kernel\", \"inducing\", \"sigma\")")
  if (!is.null(sigma)) check_positive(sigma, "sigma")
  check_positive(jitter, "jitter")
  if (jitter > 1) stop_arg("jitter", "must be small (e.g. 1e-6)")
  check_count(gh_points, "gh_points")
  if (gh_points < 5 || gh_points > 100) stop_arg("gh_points", "must be between 5 and 100")
  if (identical(posterior, eval(formals(gp_control)$posterior))) posterior <- "coupled"
  if (!is.character(posterior) || length(posterior) != 1 || !posterior %in% c("coupled", "meanfield"))
    stop_arg("posterior", "must be \"coupled\" or \"meanfield\"")
  if (!is.null(rank)) check_count(rank, "rank")
  if (!is.null(damping)) {
    check_positive(damping, "damping")
    if (damping > 1) stop_arg("damping", "must be in (0, 1]")
  }
  if (identical(sites, eval(formals(gp_control)$sites))) sites <- "separate"
  if (!is.character(sites) || length(sites) != 1 || !sites %in% c("separate", "tied"))
    stop_arg("sites", "must be \"separate\" or \"tied\"")
  if (!is.null(cluster) && !inherits(cluster, "cluster"))
    stop_arg("cluster", "must be a cluster made by parallel::makeCluster()")
  structure(list(inducing = if (!is.null(inducing)) as.integer(inducing), batch_size = batch_size,
                 iterations = as.integer(iterations), epochs = epochs,
                 learning_rate = learning_rate, tol = tol, patience = as.integer(patience),
                 natgrad_step = natgrad_step, threads = threads, seed = seed, verbose = verbose,
                 fixed = fixed, sigma = sigma, jitter = jitter, gh_points = as.integer(gh_points),
                 posterior = posterior, rank = rank, damping = damping, sites = sites, cluster = cluster),
            class = "gp_control")
}

#' @export
print.gp_control <- function(x, ...) {
  cat("<gp_control>\n")
  str(unclass(x), give.head = FALSE, no.list = TRUE)
  invisible(x)
}

stop_arg <- function(arg, ...) {
  stop(sprintf("'%s' %s", arg, paste0(...)), call. = FALSE)
}

check_positive <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x <= 0)
    stop_arg(arg, "must be a single positive number, not ", deparse1(x))
}

check_count <- function(x, arg, zero = FALSE) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x != round(x) || x < if (zero) 0 else 1)
    stop_arg(arg, "must be a single ", if (zero) "non-negative" else "positive", " integer, not ", deparse1(x))
  if (x > .Machine$integer.max) stop_arg(arg, "is too large")
}

# Resolves data-dependent defaults of a control object for n rows.
resolve_control <- function(control, n) {
  if (!inherits(control, "gp_control")) {
    if (is.list(control)) control <- do.call(gp_control, control)
    else stop_arg("control", "must be made by gp_control()")
  }
  b <- control$batch_size %||% if (n <= 20000) n else 2000
  if (b > n) b <- n
  control$batch_size <- as.integer(b)
  if (!is.null(control$epochs))
    control$iterations <- as.integer(min(.Machine$integer.max, ceiling(control$epochs * n / b)))
  control$threads <- as.integer(control$threads %||% RcppParallel::defaultNumThreads())
  control$seed <- control$seed %||% sample.int(.Machine$integer.max, 1)
  control
}

`%||%` <- function(a, b) if (is.null(a)) b else a
