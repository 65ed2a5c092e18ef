# gp_control(): the settings every engine reads, the engine options given by
# name, their validation, and resolve_control() (data-dependent defaults; the
# fit's engine options as one object, control$options).

#' Control settings for gpgam fits
#'
#' The optimisation knobs of [gpgam()] in one validated object: those every
#' inference engine reads are arguments of `gp_control()`; the options of one
#' engine are passed through `...` and validated by that engine's option
#' constructor ([vi_options()] for `inference = "vi"`, [ep_options()] for
#' `inference = "ep"`, [decoupled_options()] for `inference = "decoupled"`),
#' whose help pages document them.  Setting an option
#' of another engine than the one a fit uses is an error.
#'
#' With all rows in every iteration (the default; see `batch_size` for when
#' the engines use minibatches instead) a fit
#' maximises its objective over the kernel hyperparameters, the inducing
#' inputs and the noise variance by L-BFGS (with at most 20 such parameters:
#' after two iterations, BFGS started from a finite-difference Hessian, one
#' evaluation per parameter), with the posterior of the inducing variables
#' (the EP sites) optimal at every value, and ends at a stationary point (see
#' `tol`).  With minibatches every iteration evaluates
#' the objective on a batch of rows, takes one Adam step on those parameters
#' (after a short warm-up in which only the posterior moves), then updates
#' the posterior.  An iteration whose objective, gradient or posterior is not
#' finite or not valid is undone: the fit returns to the last state whose
#' objective was finite and halves its step sizes (after 20 such failures it
#' stops with an error).  Minibatches are drawn without replacement within an
#' epoch.
#'
#' @param inducing default number of inducing points of a `gp()` term that does
#'   not set its own `k`; `NULL` uses 20 for a term over one input, 64 for two
#'   and 100 for more.  Reduced (with a warning when it was asked for) to the
#'   number of unique input rows when that is smaller.
#' @param batch_size rows per minibatch; `NULL` uses all rows, except
#'   beyond an engine's size: `inference = "vi"` uses all rows at any size
#'   (over the distinct values of discretised covariates, see [vi_options()]), or,
#'   with `vi_options(discrete = FALSE)`, minibatches of 2000 beyond 20000
#'   rows; `"ep"` minibatches of 2000 beyond 20000 rows; `"decoupled"`
#'   minibatches of 1024 beyond 4096 rows; `"qsgp"` minibatches of 500
#'   beyond 500 rows.
#' @param iterations maximum number of iterations (L-BFGS steps, or Adam steps
#'   with minibatches).
#' @param epochs alternative to `iterations`: the maximum number of passes
#'   through the data (`iterations` is then `ceiling(epochs * n / batch_size)`;
#'   giving both is a warning).
#' @param learning_rate Adam step size (minibatch fits) for hyperparameters and inducing inputs
#'   (on the internal, standardised, log scale), for every engine.
#' @param tol a fit has converged when no entry of the gradient of its
#'   objective (the ELBO or the EP log evidence) with respect to the
#'   estimated parameters exceeds `tol` times the number of rows: a
#'   stationary point.  Full-batch fits (the variational engine with all rows
#'   per iteration, batch EP) maximise the objective by L-BFGS until then, with
#'   the posterior (or the EP sites) optimal at every step; `summary()` reports
#'   the largest gradient entry and why a fit stopped.  For a non-Gaussian
#'   variational fit the posterior is found by natural-gradient steps: its
#'   mean to within 1e-6 times the ratio of the largest gradient entry to
#'   this tolerance (at most 1e-4) while the fit is far from a stationary
#'   point, and to within 1e-6 at the point the fit reports.
#' @param patience minibatch fits (and EP with `optimizer = "adam"`) stop
#'   when the objective (per observation, averaged over an epoch) has not
#'   improved by more than `tol` for `patience` consecutive epochs; they have
#'   converged only if the gradient on all rows then passes the test above.
#' @param threads number of threads; `NULL` uses all cores
#'   ([RcppParallel::defaultNumThreads()]), and more than that many is
#'   reduced to it with a warning.  Results do not depend on it.
#' @param seed integer seed of the C++ random generator (minibatches,
#'   k-means); `NULL` draws one from R's generator, so [set.seed()] makes fits
#'   reproducible.
#' @param verbose show a progress bar.
#' @param trace the name of `verbose` in mgcv's [mgcv::gam.control()]: when
#'   given, it sets `verbose`.
#' @param fixed parameters kept at their initial values: any of `"kernel"`
#'   (lengthscales and variances, see the `lengthscale` and `variance`
#'   arguments of [gp()]; in [dgp()], of every layer), `"inducing"`
#'   (inducing inputs; in [dgp()], of every layer) and `"sigma"` (the
#'   Gaussian noise sd or the scale of a scaled t, `mgcv::scat()`; in
#'   [dgp()], of the output layer).
#' @param sigma initial (or, with `fixed = "sigma"`, fixed) residual standard
#'   deviation of a Gaussian model (the scale of a scaled t) on the scale of
#'   the response; `NULL` uses `sd(y) / 3` (in [dgp()], `sd(y) / 10`, the
#'   authors' start; for the scaled t, the scale `scat(theta = )` gives first).
#' @param jitter relative jitter added to inducing-point covariances
#'   (`jitter * mean(diag(K))`), multiplied by 10 up to three times when a
#'   Cholesky factorisation fails.
#' @param gh_points number of Gauss-Hermite nodes for binomial and negative
#'   binomial expectations at latent variances up to 1 (smaller variances
#'   use rules of fewer nodes, and the logit and the negative binomial up to
#'   a variance of 0.01 a Taylor series in the variance; above 1 the probit
#'   uses a composite Gauss-Legendre rule, the logit and the negative
#'   binomial a closed form plus a fixed rule for the smooth remainder; all
#'   are accurate to about 1e-10 with the default).
#' @param priors `TRUE` (default): weakly informative priors on the kernel
#'   hyperparameters, maximised with the objective (so the hyperparameters
#'   are posterior modes, not maximum-likelihood values): each kernel sd
#'   half-normal with scale 1 on the standardised response of a Gaussian
#'   model and 2 on the link scale otherwise; each lengthscale inverse-gamma
#'   with 1 percent of its mass below the spacing its inducing points can
#'   resolve (the input's range over \eqn{M^{1/d}}{M^(1/d)}) and 1 percent
#'   above the input's range.  For a term of one input this is weak; for a
#'   term of several inputs (d of them) the band narrows as d grows and the
#'   prior is informative: it keeps every lengthscale near the input's
#'   range, so a function that varies fast along one of many inputs of one
#'   term, or an input that does not matter, is fitted smoother than the data
#'   say (compare `fit$log_prior` with the objective, or refit with
#'   `priors = FALSE`).
#'   `FALSE`: maximum likelihood (type II).  [logLik()] is the objective
#'   without the priors; `fit$log_prior` holds their log density.
#' @param ... options of one inference engine, by name: see [vi_options()]
#'   (`natgrad_step`, `posterior`, `rank`, `discrete`, `cluster`, ...), [ep_options()] (`damping`,
#'   `sites`, `cluster`), [decoupled_options()] (`mean_basis`, `pilot`, ...),
#'   [qsgp_options()] (`features`, `feature_batch`, ...), and those of
#'   [dgp()], [dgp_options()] (`scale_inputs`, `hidden_noise`).  The fit
#'   keeps those of its engine as one object, `fit$control$options`.
#' @return An object of class `gp_control`: a list of the arguments (the
#'   engine options only where given).
#' @seealso [gpgam()], [vi_options()], [ep_options()], [decoupled_options()]
#' @examples
#' gp_control(inducing = 50, iterations = 500)
#' gp_control(batch_size = 1000, epochs = 20, threads = 1, seed = 1)
#' gp_control(posterior = "meanfield")  # an option of inference = "vi"
#' @export
gp_control <- function(inducing = NULL, batch_size = NULL, iterations = 2000, epochs = NULL,
                       learning_rate = 0.01, tol = 1e-5, patience = 20,
                       threads = NULL, seed = NULL, verbose = interactive(),
                       fixed = character(), sigma = NULL, jitter = 1e-6, gh_points = 20, priors = TRUE, trace = NULL, ...) {
  if (!is.null(inducing)) {
    check_count(inducing, "inducing")
    if (inducing < 2) stop_arg("inducing", "must be at least 2 (one inducing point cannot represent a curve)")
  }
  if (!is.null(batch_size)) check_count(batch_size, "batch_size")
  check_count(iterations, "iterations")
  if (!is.null(epochs)) {
    check_positive(epochs, "epochs")
    if (!missing(iterations))
      warning("'epochs' and 'iterations' both given: 'epochs' sets the number of iterations ",
              "(ceiling(epochs * n / batch_size)) and 'iterations' is not used", call. = FALSE)
  }
  check_positive(learning_rate, "learning_rate")
  if (learning_rate > 10) stop_arg("learning_rate", "is absurdly large (", learning_rate, "); try 0.01")
  check_positive(tol, "tol")
  check_count(patience, "patience")
  if (!is.null(threads)) {
    check_count(threads, "threads")
    cores <- RcppParallel::defaultNumThreads()
    if (threads > cores) {
      warning(sprintf("'threads' = %d is more than the %d cores available; using %d", as.integer(threads), cores, cores),
              call. = FALSE)
      threads <- cores
    }
  }
  if (!is.null(seed)) check_count(seed, "seed", zero = TRUE)
  if (!is.null(trace)) {
    if (!is.logical(trace) || length(trace) != 1 || is.na(trace)) stop_arg("trace", "must be TRUE or FALSE")
    verbose <- trace
  }
  if (!is.logical(verbose) || length(verbose) != 1 || is.na(verbose))
    stop_arg("verbose", "must be TRUE or FALSE")
  if (!is.character(fixed) || !all(fixed %in% c("kernel", "inducing", "sigma")))
    stop_arg("fixed", "must be a subset of c(\"kernel\", \"inducing\", \"sigma\")")
  if (!is.null(sigma)) check_positive(sigma, "sigma")
  check_positive(jitter, "jitter")
  if (jitter > 1) stop_arg("jitter", "must be small (e.g. 1e-6)")
  check_count(gh_points, "gh_points")
  if (gh_points < 5 || gh_points > 100) stop_arg("gh_points", "must be between 5 and 100")
  if (!is.logical(priors) || length(priors) != 1 || is.na(priors)) stop_arg("priors", "must be TRUE or FALSE")
  structure(c(list(inducing = if (!is.null(inducing)) as.integer(inducing), batch_size = batch_size,
                   iterations = as.integer(iterations), epochs = epochs, learning_rate = learning_rate, tol = tol,
                   patience = as.integer(patience), threads = threads, seed = seed, verbose = verbose,
                   fixed = fixed, sigma = sigma, jitter = jitter, gh_points = as.integer(gh_points),
                   priors = priors),
              given_engine_options(list(...))),
            class = "gp_control")
}

# The settings of mgcv's gam.control() (mgcv 1.8-41) other than trace, which
# gp_control() takes: named in an error when a control list has them.
mgcv_control_names <- c("nthreads", "ncv.threads", "irls.reg", "epsilon", "maxit", "mgcv.tol", "mgcv.half",
                        "rank.tol", "nlm", "optim", "newton", "outerPIsteps", "idLinksBases", "scalePenalty",
                        "efs.lspmax", "efs.tol", "keepData", "scale.est", "edge.correct")

# Engine options given to gp_control(), kept as given after validation: a
# name must be an option of some registered engine or of dgp()
# (option_constructors()), and its value must be valid for at least one
# that declares it, together with the other options given of that one (so
# that joint constraints such as qsgp's feature_batch <= features see
# both; two engines may use the same name with different
# meanings; the engine of the fit validates its own again in
# resolve_control(), dgp() in dgp_control_options()).
given_engine_options <- function(opts) {
  opts <- Filter(Negate(is.null), opts)
  if (length(opts) == 0) return(list())
  nm <- names(opts)
  if (is.null(nm) || any(nm == ""))
    stop_arg("...", "must be named engine options (see ",
             paste0("?", sub("()", "", names(option_constructors()), fixed = TRUE), "_options", collapse = ", "), ")")
  ctors <- option_constructors()
  bad <- setdiff(nm, engine_option_names())
  mg <- intersect(bad, mgcv_control_names)
  if (length(mg))
    stop_arg("control", "has mgcv's gam.control() setting(s) ", paste0("'", utils::head(mg, 3), "'", collapse = ", "),
             if (length(mg) > 3) paste0(" and ", length(mg) - 3, " more"),
             ": gpgam() takes gp_control(), whose nearest counterparts are iterations (maxit), threads ",
             "(nthreads), tol (epsilon) and verbose (trace); see ?gp_control")
  if (length(bad))
    stop_arg(bad[1], "is not an argument of gp_control() nor an option of an inference engine or of dgp(); options: ",
             paste(vapply(names(ctors), function(e) paste0(paste(names(formals(ctors[[e]])), collapse = ", "),
                                                           " (", e, ")"), ""), collapse = "; "))
  for (n in nm) {
    owners <- Filter(function(f) n %in% names(formals(f)), ctors)
    for (f in owners) {
      r <- tryCatch(list(value = do.call(f, opts[intersect(nm, names(formals(f)))])[[n]]), error = function(cond) cond)
      if (!inherits(r, "error")) break
    }
    if (inherits(r, "error")) stop(r)
    opts[n] <- list(r$value)
  }
  opts
}

#' @export
print.scalegp_options <- function(x, ...) {
  cat("<", class(x)[1], ">\n", sep = "")
  str(unclass(x), give.head = FALSE, no.list = TRUE)
  invisible(x)
}

#' @export
print.gp_control <- function(x, ...) {
  cat("<gp_control>\n")
  str(unclass(x), give.head = FALSE, no.list = TRUE)
  invisible(x)
}

# An error naming the arguments in `dots` (list(...) of a method that takes
# none), with `hint` after them.
no_dots <- function(fun, dots, hint) {
  if (!length(dots)) return(invisible())
  nm <- names(dots) %||% rep("", length(dots))
  nm[!nzchar(nm)] <- "(unnamed)"
  stop(sprintf("%s(): unused argument(s) %s (%s)", fun, paste0("'", nm, "'", collapse = ", "), hint), call. = FALSE)
}

stop_arg <- function(arg, ...) {
  stop(sprintf("'%s' %s", arg, paste0(...)), call. = FALSE)
}

# match.arg() for a user's argument whose choices are the default of the
# calling function's formal of the same name, with stop_arg()'s error naming
# the argument and its choices (match.arg() says "'arg' should be one of").
match_arg <- function(arg) {
  name <- deparse(substitute(arg))
  choices <- eval(formals(sys.function(sys.parent()))[[name]], envir = parent.frame())
  if (is.null(arg) || identical(arg, choices)) return(choices[1L])
  one_of <- paste0("must be one of ", paste0("\"", choices, "\"", collapse = ", "))
  if (!is.character(arg) || length(arg) != 1L || is.na(arg)) stop_arg(name, one_of, ", not ", deparse1(arg))
  i <- pmatch(arg, choices, nomatch = 0L)
  if (i == 0L) stop_arg(name, one_of, ", not \"", arg, "\"")
  choices[i]
}

check_positive <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x <= 0)
    stop_arg(arg, "must be a single positive number, not ", deparse1(x))
}

# One of `choices` (the first when x is the whole default vector).
check_choice <- function(x, arg, choices) {
  if (identical(x, choices)) return(choices[1])
  if (!is.character(x) || length(x) != 1 || !x %in% choices)
    stop_arg(arg, "must be one of ", paste0("\"", choices, "\"", collapse = ", "))
  x
}

check_count <- function(x, arg, zero = FALSE) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x != round(x) || x < if (zero) 0 else 1)
    stop_arg(arg, "must be a single ", if (zero) "non-negative" else "positive", " integer, not ", deparse1(x))
  if (x > .Machine$integer.max) stop_arg(arg, "is too large")
}

# Resolves data-dependent defaults of a control object for n rows, and holds
# the options of `engine` (see engine_options()) as one object,
# control$options, in place of the engine options given to gp_control().
resolve_control <- function(control, n, engine, family = "gaussian") {
  if (!inherits(control, "gp_control")) {
    if (is.list(control)) control <- do.call(gp_control, control)
    else stop_arg("control", "must be made by gp_control()")
  }
  opts <- engine_options(engine, control)
  b <- control$batch_size %||% default_batch_size(engine, n, family, opts)
  if (b > n) b <- n
  control$batch_size <- as.integer(b)
  if (!is.null(control$epochs))
    control$iterations <- as.integer(min(.Machine$integer.max, ceiling(control$epochs * n / b)))
  control$threads <- as.integer(control$threads %||% RcppParallel::defaultNumThreads())
  control$seed <- control$seed %||% sample.int(.Machine$integer.max, 1)
  control[intersect(names(control), engine_option_names())] <- NULL
  control$options <- structure(opts, class = c(paste0(engine$name, "_options"), "scalegp_options"))
  control
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# The value of `expr`, evaluated (in the caller's frame) with R's generator
# seeded by set.seed(seed); R's random number stream is left as it was.
with_seed <- function(seed, expr) {
  had <- exists(".Random.seed", envir = globalenv(), inherits = FALSE)
  old <- if (had) get(".Random.seed", envir = globalenv(), inherits = FALSE)
  on.exit(if (had) assign(".Random.seed", old, envir = globalenv())
          else if (exists(".Random.seed", envir = globalenv(), inherits = FALSE))
            rm(".Random.seed", envir = globalenv()))
  set.seed(seed)
  expr
}
