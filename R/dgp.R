# dgp(): deep Gaussian processes trained by approximate expectation
# propagation (Bui et al. 2016; C++ core inst/include/scalegp/dgp.hpp), its
# options (dgp_options(), given to gp_control() as the engines' are), data
# larger than memory read in chunks (chunked_csv(), dgp_chunked()) and its
# methods: print, summary, predict, sigma, logLik, plot.  Families:
# gaussian() and binomial(link = "probit").

#' @include engine.R
NULL

#' Fit a deep Gaussian process by approximate expectation propagation
#'
#' `dgp()` fits a deep Gaussian process (a stack of GP layers, each layer's
#' outputs the next layer's inputs) to a numeric response by approximate
#' expectation propagation (Bui et al. 2016), or a binary response with a
#' probit output layer (closed-form expectations; Bui et al. 2016, Appendix F).  Every layer holds independent
#' sparse (FITC) GPs, one per output dimension, sharing one squared
#' exponential kernel with ARD lengthscales and one noise variance per layer;
#' each GP has its own `inducing` inducing inputs.  The posterior over the
#' inducing outputs is the prior times one tied Gaussian factor per GP raised
#' to the power n; the EP energy (minus the approximate log marginal
#' likelihood) is computed by propagating Gaussian moments through the
#' layers (exact kernel expectations) and minimised by Adam over the factors,
#' kernel parameters, noise variances and inducing inputs jointly, on
#' minibatches of `gp_control(batch_size = )` rows (default 50).
#'
#' Inputs come from `model.matrix()` of the formula's right-hand side
#' (factors as dummy columns, the intercept column dropped) and are
#' standardised (unless `gp_control(scale_inputs = FALSE)`, see
#' [dgp_options()]), as is the response; the noise sd, predictions and the
#' log marginal likelihood are reported on the scale of the data.
#' Initialisation follows the authors' code: first-layer inducing inputs by
#' k-means, lengthscales the median distance between inputs; later layers
#' long lengthscales and inducing inputs on \eqn{[-1, 1]}; noise sd 0.1 in
#' every layer (on the standardised scale); small random factors.
#'
#' `gp_control(fixed = )` holds parameters at their initial values:
#' `"kernel"` the lengthscales and kernel variances of every layer,
#' `"inducing"` the inducing inputs of every layer, `"sigma"` the output
#' noise (Gaussian family), whose start is `gp_control(sigma = )` (default
#' a tenth of `sd(y)`).  [dgp_options()] holds what only this model has (the
#' input scaling, the hidden layers' starting noise).
#'
#' The fit is stochastic: it runs `gp_control(iterations = )` Adam steps
#' (or `epochs` passes) and stops; no stationary point is checked, and
#' `converged` is `FALSE`.  A step that makes the energy non-finite is
#' undone and the learning rate halved (at most 10 times; `fit$stop` says
#' how many).  The reported objective is the approximate log
#' marginal likelihood on all rows at the end.
#'
#' @param formula a formula `y ~ x1 + x2 + ...` (a numeric response; the
#'   right-hand side as in [lm()], without `offset()`: the layers model the
#'   whole mean, so an offset is refused).
#' @param data a data frame (or a list of variables; without it the
#'   variables come from the formula's environment, as in [lm()]); or, for
#'   data larger than memory, a function
#'   that returns it in chunks (`data(reset = TRUE)` rewinds, `data()`
#'   returns the next chunk as a data frame or `NULL` after the last, as for
#'   `biglm::bigglm()`), such as [chunked_csv()] makes for a CSV file.  With
#'   chunks, the fit reads the data once before training for the row
#'   count, the means and sds and a uniform sample of at most
#'   `max(10000, 5 * max(inducing))` rows for the initialisation (and once
#'   more before that for the factor levels, when a chunk has factor or
#'   character columns), then
#'   makes `gp_control(epochs = )` passes (default: the passes that
#'   `iterations` minibatches make, at least one), each chunk in turn
#'   trained by `ceiling(rows / batch_size)` Adam steps (Adam's state
#'   carries from chunk to chunk), and a last pass for the objective;
#'   it holds one chunk at a time and keeps no data, fitted values or model
#'   frame.  `weights`, `subset` and `offset` are not supported there.
#' @param hidden the widths of the hidden layers, one positive integer per
#'   hidden layer: the default `hidden = 2` is one hidden layer of two
#'   dimensions (the paper's DGP-2), `hidden = c(3, 2)` two hidden layers;
#'   `hidden = 0` (or `integer(0)`) no hidden layer, a sparse (FITC) GP
#'   trained on the same energy (the paper's GP baseline).  A hidden layer of
#'   width 1 is a bottleneck (all inputs pass through one number): in Bui et
#'   al. (2016) it predicted worse than the GP on most data sets, which is
#'   why the default is 2.
#' @param inducing number of inducing points of every GP (at least 2; in the
#'   first layer more than the number of rows is reduced to it with a
#'   warning), or one number per layer (hidden layers first, then the output
#'   layer).
#' @param family `gaussian()`, or `binomial(link = "probit")` for a 0/1,
#'   logical or two-level factor response (the last layer then has no noise).
#' @param control a [gp_control()] object; `dgp()` reads `batch_size`
#'   (default 50), `iterations`, `epochs`, `learning_rate`, `threads`, `seed`,
#'   `verbose`, `jitter` (added to the diagonal of each GP's inducing
#'   covariance), `fixed`, `sigma` and the options of [dgp_options()].  It
#'   has no stopping test, so a control that sets `inducing` (use the
#'   `inducing` argument), `tol`, `patience`, `gh_points` or an option of a
#'   [gpgam()] engine draws a warning that it is ignored (it puts no priors
#'   on its parameters whatever `priors` says).
#' @param weights optional positive prior weights (Gaussian family): row i's
#'   output noise variance is \eqn{\sigma^2 / w_i}{sigma^2 / w_i}, as in
#'   [gpgam()] and [lm()]; a row with weight 2 counts as the mean of two
#'   observations.  Not supported with the probit family.
#' @param subset optional subset of rows, as in [lm()].
#' @param na.action what to do with missing values (default
#'   `getOption("na.action")`).
#' @param model keep the model frame in the fit (needed by `plot(fit, which = "fit")`).
#' @return An object of class `c("dgp", "scalegp")`; see [predict.dgp()],
#'   [summary.dgp()] and [plot.dgp()].  A fit to data read in chunks has
#'   `chunks` (rows per chunk) and no `y`, fitted values or model frame.
#' @seealso [dgp_options()], [chunked_csv()]
#' @references Bui, Hernandez-Lobato, Hernandez-Lobato, Li and Turner (2016)
#'   Deep Gaussian processes for regression using approximate expectation
#'   propagation. ICML.
#' @examples
#' set.seed(1)
#' d <- data.frame(x1 = runif(100, -2, 2), x2 = runif(100))
#' d$y <- sign(d$x1) + 0.5 * d$x2 + rnorm(100, sd = 0.1)
#' fit <- dgp(y ~ x1 + x2, data = d, inducing = 10,
#'            control = gp_control(iterations = 300, seed = 1, threads = 1, verbose = FALSE))
#' fit
#' summary(fit)
#' predict(fit, data.frame(x1 = c(-1, 1), x2 = 0.5), se.fit = TRUE)
#' logLik(fit)
#' sigma(fit)
#' # the same data from a CSV file, read 40 rows at a time
#' f <- tempfile(fileext = ".csv")
#' write.csv(d, f, row.names = FALSE)
#' fc <- dgp(y ~ x1 + x2, data = chunked_csv(f, rows = 40), inducing = 10,
#'           control = gp_control(iterations = 300, seed = 1, threads = 1, verbose = FALSE))
#' fc
#' unlink(f)
#' @export
dgp <- function(formula, data, hidden = 2, inducing = 50, family = gaussian(), control = gp_control(),
                weights, subset, na.action, model = TRUE) {
  cl <- match.call()
  if (!inherits(formula, "formula") || length(formula) != 3)
    stop_arg("formula", "must be a two-sided formula such as y ~ x1 + x2")
  if (count_gp_calls(formula[[3]]) > 0)
    stop_arg("formula", "of dgp() lists its inputs plainly (y ~ x1 + x2): every layer is a GP over all of them; ",
             "gp(), s(), te() and ti() terms belong to gpgam()")
  if (!is.null(attr(stats::terms(formula, allowDotAsName = TRUE), "offset")))
    stop_arg("formula", "has an offset(), which dgp() does not support (its layers model the whole mean): ",
             "subtract it from the response, or fit with gpgam()")
  if (!is.numeric(hidden) || any(!is.finite(hidden)) || any(hidden != round(hidden)) || any(hidden < 0) ||
      (length(hidden) > 1 && any(hidden == 0)))
    stop_arg("hidden", "must be positive integers (the widths of the hidden layers), or 0 for none, not ",
             deparse1(hidden))
  hidden <- as.integer(hidden[hidden > 0])
  n_layers <- length(hidden) + 1L
  if (!is.numeric(inducing) || !(length(inducing) %in% c(1L, n_layers)))
    stop_arg("inducing", "must be one count, or one per layer (", n_layers, " here)")
  for (i in seq_along(inducing)) check_count(inducing[i], "inducing")
  if (any(inducing < 2))
    stop_arg("inducing", "must be at least 2 per layer (one inducing point cannot represent a curve)")
  inducing <- rep_len(as.integer(inducing), n_layers)
  fam <- likelihood_name(family)
  if (!fam$lik %in% c("gaussian", "probit"))
    stop_arg("family", "must be gaussian() or binomial(link = \"probit\") for dgp()")
  probit <- fam$lik == "probit"
  if (!inherits(control, "gp_control")) {
    if (is.list(control)) control <- do.call(gp_control, control)
    else stop_arg("control", "must be made by gp_control()")
  }
  warn_dgp_unused_control(control, probit)
  opts <- dgp_control_options(control)
  if (!missing(data) && is.function(data))
    return(dgp_chunked(cl, formula, data, hidden, inducing, fam, control, opts,
                       if (missing(na.action)) NULL else na.action))
  mf <- gp_model_frame(cl, parent.frame(), formula)
  n <- nrow(mf)
  w <- stats::model.weights(mf)
  if (!is.null(w)) {
    if (!is.numeric(w) || any(!is.finite(w) | w <= 0))
      stop_arg("weights", "must be finite and positive (drop rows of weight zero with subset =)")
    if (probit && any(w != 1)) stop_arg("weights", "are supported with gaussian() only in dgp()")
  }
  w <- as.numeric(w %||% rep(1, n))
  y <- stats::model.response(mf)
  if (is.matrix(y)) stop_arg("formula", "must have a vector response")
  if (probit) {
    y <- prepare_response(y, "probit", names(mf)[1L])
    ylevels <- attr(y, "levels")
    y <- as.numeric(y)
    if (any(y != 0 & y != 1)) stop_arg("formula", "needs a 0/1, logical or two-level factor response with binomial()")
  } else {
    if (!is.numeric(y)) stop_arg("formula", "must have a numeric response with gaussian()")
    y <- as.numeric(y)
  }
  check_finite_columns(mf, names(mf), "data")
  tt <- stats::delete.response(stats::terms(mf))
  X <- dgp_design(tt, mf)
  contrasts <- attr(X, "contrasts")
  xsd <- apply(X, 2, stats::sd)
  ysd <- stats::sd(y)
  inducing <- dgp_check_scales(xsd, n, inducing, ysd)
  if (probit) ysd <- 1
  scaling <- dgp_scaling(colMeans(X), xsd, mean(y), ysd, probit, opts)
  Xs <- dgp_standardise(X, scaling)
  b <- min(n, control$batch_size %||% 50L)
  iterations <- if (!is.null(control$epochs)) as.integer(min(.Machine$integer.max, ceiling(control$epochs * n / b)))
                else control$iterations
  threads <- as.integer(control$threads %||% RcppParallel::defaultNumThreads())
  seed <- control$seed %||% sample.int(.Machine$integer.max, 1)
  settings <- dgp_settings(control, opts, probit, ysd, b, iterations)
  jac <- n * log(ysd)  # log-Jacobian of the response standardisation
  control$iterations <- as.integer(iterations)
  control$priors <- FALSE  # dgp() puts no priors on its parameters (and the progress bar must not say so)
  monitor <- progress_monitor(control, "approx. log ML (minibatch)", shift = jac)
  t0 <- proc.time()[["elapsed"]]
  yint <- dgp_target(y, scaling, probit)
  res <- .dgp_fit(Xs, matrix(yint), w, hidden, inducing, settings,
                  control$jitter, probit, threads, seed, monitor)
  elapsed <- proc.time()[["elapsed"]] - t0
  L <- length(res$net$layers)
  eta <- res$fitted$mean[[L]][, 1] * ysd + scaling$y$center
  fm <- if (probit) stats::pnorm(eta / sqrt(1 + res$fitted$var[[L]][, 1])) else eta
  control$batch_size <- b
  fit <- dgp_fit_object(cl, formula, tt, stats::.getXlevels(tt, mf), contrasts, colnames(X), scaling, n, hidden,
                        inducing, fam, if (probit) ylevels, res$net, res$objective - jac, res$trace - jac,
                        res$iterations, sprintf("stopped by %s after %d Adam steps", res$stop, res$iterations),
                        res$failures,
                        c(fit = elapsed, res$seconds, per_iteration = res$seconds[["iterations"]] / max(1, res$iterations)),
                        control, opts, threads, seed)
  fit[c("y", "fitted.values", "linear.predictors", "prior.weights", "na.action")] <-
    list(y, fm, eta, w, attr(mf, "na.action"))
  if (model) fit$model <- mf
  fit
}

#' Options of deep Gaussian process fits
#'
#' What only [dgp()] has, given to [gp_control()] by name as the options of
#' the [gpgam()] engines are (`gp_control(scale_inputs = FALSE)`); the fit
#' keeps them as `fit$control$options`.  The parameters every model has are
#' held fixed with `gp_control(fixed = )` and the output noise started with
#' `gp_control(sigma = )`.
#'
#' @param scale_inputs `TRUE` (default): centre every input column and divide
#'   it by its sd before the first layer (the protocol of the paper's
#'   experiments); the first layer's lengthscales and inducing inputs are
#'   then in sd units.  `FALSE`: the inputs enter as they are (the authors'
#'   released code), for inputs already on a common, meaningful scale.
#' @param hidden_noise initial noise sd of every hidden layer, on the
#'   network's standardised scale (default 0.1, the authors' start); learned
#'   with the other parameters.
#' @return A list of class `dgp_options`.
#' @seealso [dgp()], [gp_control()]
#' @examples
#' dgp_options()
#' set.seed(1)
#' d <- data.frame(x = runif(100, -2, 2)); d$y <- sign(d$x) + rnorm(100, sd = 0.1)
#' fit <- dgp(y ~ x, data = d, inducing = 10,
#'            control = gp_control(iterations = 200, seed = 1, threads = 1, verbose = FALSE,
#'                                 scale_inputs = FALSE, hidden_noise = 0.05, fixed = "inducing"))
#' fit$control$options
#' @export
dgp_options <- function(scale_inputs = TRUE, hidden_noise = 0.1) {
  if (!is.logical(scale_inputs) || length(scale_inputs) != 1 || is.na(scale_inputs))
    stop_arg("scale_inputs", "must be TRUE or FALSE")
  check_positive(hidden_noise, "hidden_noise")
  if (hidden_noise > 10) stop_arg("hidden_noise", "is absurdly large (", hidden_noise, "); the default is 0.1")
  structure(list(scale_inputs = scale_inputs, hidden_noise = hidden_noise),
            class = c("dgp_options", "scalegp_options"))
}

register_model_options("dgp", dgp_options)

# dgp()'s options in a control object: those given to gp_control(), over
# those it already holds (the control of a dgp fit), validated again.
dgp_control_options <- function(control) {
  mine <- names(formals(dgp_options))
  held <- if (inherits(control$options, "dgp_options")) unclass(control$options) else list()
  given <- Filter(Negate(is.null), unclass(control)[intersect(names(control), mine)])
  do.call(dgp_options, c(given, held[setdiff(names(held), names(given))]))
}

# The scaling of a dgp fit: inputs centred and divided by their sds (or
# left as they are), a Gaussian response standardised.
dgp_scaling <- function(xmean, xsd, ymean, ysd, probit, opts) {
  list(x = if (opts$scale_inputs) list(center = xmean, scale = xsd)
           else list(center = rep(0, length(xsd)), scale = rep(1, length(xsd))),
       y = list(center = if (probit) 0 else ymean, scale = ysd))
}

# The inputs of a model frame for terms `tt`: its model matrix without the
# intercept column (attribute "contrasts" kept).
dgp_design <- function(tt, mf, contrasts = NULL) {
  X <- stats::model.matrix(tt, mf, contrasts.arg = contrasts)
  ctr <- attr(X, "contrasts")
  X <- X[, colnames(X) != "(Intercept)", drop = FALSE]
  attr(X, "contrasts") <- ctr
  X
}

# Inputs on the network's scale, and the response as the network fits it
# (standardised; -1/+1 with the probit output).
dgp_standardise <- function(X, scaling) sweep(sweep(X, 2, scaling$x$center), 2, scaling$x$scale, "/")
dgp_target <- function(y, scaling, probit) if (probit) 2 * y - 1 else (y - scaling$y$center) / scaling$y$scale

# Checks on the whole data's summaries (in memory or over all chunks): the
# sds `xsd` of the inputs (named), the row count, the inducing counts per
# layer and the response sd.  Returns the inducing counts, the first layer's
# reduced to the number of rows with a warning (as gpgam() reduces a term's).
dgp_check_scales <- function(xsd, n, inducing, ysd) {
  if (length(xsd) == 0) stop_arg("formula", "has no inputs on its right-hand side")
  if (any(!(xsd > 0)))
    stop_arg("data", "input column(s) ", paste0("'", names(xsd)[!(xsd > 0)], "'", collapse = ", "),
             " are constant: they cannot inform a kernel; drop them from the formula")
  if (!(ysd > 0)) stop_arg("formula", "has a constant response")
  if (inducing[1] > n) {
    warning("'inducing' = ", inducing[1], " in the first layer exceeds the ", n, " rows; using ", n,
            " inducing points there", call. = FALSE)
    inducing[1] <- as.integer(n)
  }
  inducing
}

# The settings list the C++ fit reads (glue settings_from() and
# options_from()): Adam, minibatch, what is held fixed, the starting noise.
dgp_settings <- function(control, opts, probit, ysd, b, iterations) {
  fixed <- control$fixed
  list(jitter = control$jitter, batch_size = as.integer(b), iterations = as.integer(iterations),
       learning_rate = control$learning_rate, tol = control$tol, patience = control$patience,
       learn_kernel = !"kernel" %in% fixed, learn_inducing = !"inducing" %in% fixed,
       learn_noise = probit || !"sigma" %in% fixed, noise_sd = opts$hidden_noise,
       output_noise_sd = if (probit || is.null(control$sigma)) 0.1 else control$sigma / ysd)
}

# The fields every dgp fit has (dgp() on a data frame adds the data's).
dgp_fit_object <- function(cl, formula, tt, xlevels, contrasts, inputs, scaling, n, hidden, inducing, fam, ylevels,
                           net, objective, trace, iterations, stopped, failures, timing, control, opts, threads, seed) {
  probit <- fam$lik == "probit"
  control$threads <- threads
  control$seed <- seed
  control[intersect(names(control), engine_option_names())] <- NULL
  control$options <- opts
  structure(list(call = cl, formula = formula, terms = tt, xlevels = xlevels, contrasts = contrasts,
                 inputs = inputs, scaling = scaling, n = n, hidden = as.integer(hidden),
                 inducing = as.integer(inducing), family = if (probit) stats::binomial("probit") else stats::gaussian(),
                 likelihood = fam$lik, ylevels = ylevels, net = net, objective = objective, trace = trace,
                 iterations = iterations, converged = FALSE,
                 stop = paste0(stopped, " (a stochastic fit: no convergence check)",
                               if (failures > 0)
                                 sprintf("; %d step%s undone after a non-finite energy, the learning rate halved each time",
                                         failures, if (failures > 1) "s" else "")),
                 params = list(sigma = if (probit) NA_real_ else exp(net$layers[[length(net$layers)]]$log_sn) * scaling$y$scale),
                 df = dgp_n_params(net), timing = timing, control = control, title = "Deep Gaussian process",
                 engine = list(name = "dgp", label = "approximate EP, Bui et al. 2016",
                               objective = "Approximate log marginal likelihood")),
            class = c("dgp", "scalegp"))
}

# Number of free parameters of a network (kernel, noise, inducing inputs, factors).
dgp_n_params <- function(net) {
  sum(vapply(net$layers, function(ly) length(ly$log_ell) + 2 + sum(lengths(ly$Z)) + sum(lengths(ly$rho)) +
               sum(lengths(ly$tau)), 1))
}

# The standardised inputs of the rows of `newdata` without a missing input
# (attribute "ok": which rows those are; predict.dgp() gives the others NA,
# as predict.gpgam() does).
dgp_inputs <- function(object, newdata) {
  if (!is.data.frame(newdata)) stop_arg("newdata", "must be a data frame")
  tt <- stats::delete.response(object$terms)
  miss <- setdiff(all.vars(tt), names(newdata))
  if (length(miss)) stop_arg("newdata", "lacks the variable(s) ", paste0("'", miss, "'", collapse = ", "))
  mf <- stats::model.frame(tt, newdata, xlev = object$xlevels, na.action = stats::na.pass)
  ok <- stats::complete.cases(mf)
  X <- dgp_design(tt, mf[ok, , drop = FALSE], object$contrasts)[, object$inputs, drop = FALSE]
  if (any(!is.finite(X))) stop_arg("newdata", "has non-finite values")
  structure(dgp_standardise(X, object$scaling), ok = ok)
}

# ---- data read in chunks

#' Read a CSV file in chunks
#'
#' A data source for [dgp()] on data larger than memory: a function in the
#' convention of `biglm::bigglm()`.  `f(reset = TRUE)` rewinds to the first
#' row (closing the file; the next call opens it again); `f()` returns the
#' next `rows` rows as a data frame, and `NULL` after the last (closing the
#' file).  A function of your own that behaves so (a
#' database cursor, files in turn) serves `dgp()` the same way.
#'
#' @param file path of a CSV file with a header line.
#' @param rows rows per chunk: the most `dgp()` holds in memory at once
#'   (with their model matrix).
#' @param ... passed to [utils::read.csv()] for the header and every chunk
#'   (e.g. `colClasses`, `na.strings`); not `header`, `nrows` or `col.names`.
#' @return A function of one argument, `reset`.
#' @seealso [dgp()]
#' @examples
#' f <- tempfile(fileext = ".csv")
#' write.csv(data.frame(x = 1:5, y = (1:5)^2), f, row.names = FALSE)
#' src <- chunked_csv(f, rows = 2)
#' src(reset = TRUE)
#' src(); src(); src(); src()
#' unlink(f)
#' @export
chunked_csv <- function(file, rows = 1e5, ...) {
  if (!is.character(file) || length(file) != 1 || is.na(file) || !file.exists(file))
    stop_arg("file", "must be the path of an existing file, not ", deparse1(file))
  check_count(rows, "rows")
  args <- list(...)
  clash <- intersect(names(args), c("header", "nrows", "col.names", "file", "text"))
  if (length(clash)) stop_arg(clash[1], "is set by chunked_csv(); do not pass it")
  con <- NULL
  header <- NULL
  close_file <- function() {
    if (!is.null(con)) close(con)
    con <<- NULL
  }
  function(reset = FALSE) {
    if (reset) return(invisible(close_file()))
    if (is.null(con)) {
      con <<- file(file, "r")
      header <<- names(do.call(utils::read.csv, c(list(text = readLines(con, n = 1L)), args)))
    }
    chunk <- tryCatch(do.call(utils::read.csv, c(list(file = con, header = FALSE, nrows = rows, col.names = header),
                                                 args)),
                      error = function(e) if (grepl("no lines available", conditionMessage(e))) NULL else stop(e))
    if (is.null(chunk) || nrow(chunk) == 0) return(close_file())
    chunk
  }
}

# The next chunk of a source, checked (`again`: a pass after the first,
# which must see the same chunks).
next_chunk <- function(source, again = FALSE) {
  ch <- source(reset = FALSE)
  if (again && is.null(ch))
    stop_arg("data", "returned fewer chunks after a reset than in its first pass; a chunk source must return ",
             "the same chunks after every reset")
  if (!is.null(ch) && !is.data.frame(ch))
    stop_arg("data", "returned a ", class(ch)[1], " as a chunk; a data frame (or NULL after the last chunk) is needed")
  ch
}

# Count, mean and sum of squared deviations of the columns of X combined
# with those of a previous set of rows (Chan, Golub and LeVeque 1979).
update_moments <- function(mom, X) {
  k <- nrow(X)
  if (k == 0) return(mom)
  m <- colMeans(X)
  ss <- colSums(sweep(X, 2, m)^2)
  if (is.null(mom)) return(list(n = k, mean = m, ss = ss))
  n <- mom$n + k
  d <- m - mom$mean
  list(n = n, mean = mom$mean + d * k / n, ss = mom$ss + ss + d^2 * mom$n * k / n)
}

# dgp() on data read in chunks: `source` is a function as chunked_csv()
# returns.  Preliminary passes: the levels of the factor and character
# variables (when the first chunk has any), then the row count, the means
# and sds of the inputs and response, and a uniform sample of at most
# max(10000, 5 max(inducing)) rows (reservoir sampling, R's generator
# seeded by the fit's seed) for the initialisation.  Training: `epochs`
# passes over the chunks, each chunk ceiling(rows / batch_size) Adam steps
# from the network and Adam state the last chunk left (N = all rows).  The
# reported objective is the energy of all rows, the row-weighted mean of
# the chunks' energies.  At most one chunk and its model matrix are held at
# once; the fit keeps no data, fitted values or model frame.
dgp_chunked <- function(cl, formula, source, hidden, inducing, fam, control, opts, na_action) {
  probit <- fam$lik == "probit"
  na_action <- match.fun(na_action %||% getOption("na.action", "na.omit"))
  for (a in c("weights", "subset", "offset"))
    if (!is.null(cl[[a]])) stop_arg(a, "is not supported with data read in chunks; filter or weight rows in the data source")
  source(reset = TRUE)
  on.exit(source(reset = TRUE), add = TRUE)  # a file source closes its connection
  first <- next_chunk(source)
  if (is.null(first) || nrow(first) == 0) stop_arg("data", "returned no rows")
  tt_full <- stats::terms(formula, data = first)
  vars <- all.vars(tt_full)
  miss <- setdiff(vars, names(first))
  if (length(miss)) stop_arg("data", "chunks have no column(s) ", paste0("'", miss, "'", collapse = ", "))
  lev_vars <- vars[vapply(first[vars], function(v) is.factor(v) || is.character(v), TRUE)]
  xlev <- NULL
  if (length(lev_vars)) {  # pass 1: levels
    lev <- stats::setNames(vector("list", length(lev_vars)), lev_vars)
    ch <- first
    while (!is.null(ch)) {
      for (v in lev_vars) lev[[v]] <- union(lev[[v]], if (is.factor(ch[[v]])) levels(ch[[v]]) else unique(ch[[v]]))
      ch <- next_chunk(source)
    }
    # a factor keeps its levels' order (those first seen in later chunks after
    # them); a character column gets factor()'s sorted levels
    xlev <- lapply(lev_vars, function(v) if (is.factor(first[[v]])) as.character(stats::na.omit(lev[[v]]))
                                         else sort(stats::na.omit(lev[[v]])))
    names(xlev) <- lev_vars
    source(reset = TRUE)
    first <- next_chunk(source)
  }
  resp <- as.character(formula[[2]])
  ylev <- if (length(formula[[2]]) == 1 && resp %in% names(xlev)) xlev[[resp]]
           else if (probit && length(formula[[2]]) == 1 && is.logical(first[[resp]])) c("FALSE", "TRUE")
  xlev_in <- xlev[setdiff(names(xlev), resp)]
  tt <- stats::delete.response(tt_full)
  # one chunk -> list(X, y), standardised when `scaling` is given
  prep <- function(ch, scaling = NULL) {
    for (v in names(xlev)) ch[[v]] <- factor(ch[[v]], levels = xlev[[v]])
    mf <- stats::model.frame(tt_full, ch, na.action = na_action, drop.unused.levels = FALSE)
    check_finite_columns(mf, names(mf), "data")
    X <- dgp_design(tt, mf)
    contr <- attr(X, "contrasts")
    y <- stats::model.response(mf)
    if (probit) {  # one class in a chunk is fine (prepare_response() checks whole data)
      if (is.matrix(y)) stop_arg("formula", "must have a vector response")
      y <- if (is.factor(y)) as.numeric(y != levels(y)[1]) else as.numeric(y)
      if (any(y != 0 & y != 1)) stop_arg("formula", "needs a 0/1, logical or two-level factor response with binomial()")
    } else {
      if (!is.numeric(y)) stop_arg("formula", "must have a numeric response with gaussian()")
      y <- as.numeric(y)
    }
    if (!is.null(scaling)) {
      X <- dgp_standardise(X, scaling)
      y <- dgp_target(y, scaling, probit)
    }
    list(X = X, y = y, contrasts = contr)
  }
  if (probit && !is.null(ylev) && length(ylev) != 2)
    stop_arg("formula", "has a response with ", length(ylev), " levels over the chunks; binomial needs 2")
  # pass 2: count, moments, sample
  seed <- control$seed %||% sample.int(.Machine$integer.max, 1)
  cap <- max(10000L, 5L * max(inducing))
  mom <- NULL
  ymom <- NULL
  sample_X <- NULL
  n <- 0
  chunk_rows <- integer()
  ch <- first
  contrasts <- NULL
  with_seed(seed, while (!is.null(ch)) {
    p <- prep(ch)
    contrasts <- contrasts %||% p$contrasts
    k <- nrow(p$X)
    chunk_rows <- c(chunk_rows, k)
    mom <- update_moments(mom, p$X)
    ymom <- update_moments(ymom, matrix(p$y))
    # reservoir: row i (1-based over all rows) enters with probability cap / i
    if (k > 0) {
      i <- n + seq_len(k)
      fill <- i <= cap
      sample_X <- rbind(sample_X, p$X[fill, , drop = FALSE])
      slot <- ifelse(fill, NA, floor(stats::runif(k) * i) + 1)
      for (r in which(!fill & slot <= cap)) sample_X[slot[r], ] <- p$X[r, ]
    }
    n <- n + k
    ch <- next_chunk(source)
  })
  if (n < 2) stop_arg("data", "has ", n, " usable row(s); at least 2 are needed")
  if (probit && ymom$ss[[1]] == 0)
    stop_arg("y", "has a single class over all chunks; binomial needs both")
  xsd <- sqrt(mom$ss / (n - 1))
  ysd <- sqrt(ymom$ss[[1]] / (n - 1))
  inducing <- dgp_check_scales(xsd, n, inducing, ysd)
  if (probit) ysd <- 1
  scaling <- dgp_scaling(mom$mean, xsd, ymom$mean[[1]], ysd, probit, opts)
  b <- as.integer(control$batch_size %||% 50L)
  steps <- as.integer(ceiling(chunk_rows / b))  # 0 for a chunk that na.action emptied
  epochs <- control$epochs %||% max(1, round(control$iterations * b / n))
  epochs <- as.integer(ceiling(epochs))
  threads <- as.integer(control$threads %||% RcppParallel::defaultNumThreads())
  settings <- c(dgp_settings(control, opts, probit, ysd, b, 1L), total_rows = n)
  jac <- n * log(ysd)
  control$iterations <- as.integer(epochs * sum(steps))
  control$priors <- FALSE
  monitor <- progress_monitor(control, "approx. log ML (minibatch)", shift = jac)
  t0 <- proc.time()[["elapsed"]]
  net <- .dgp_init(dgp_standardise(sample_X, scaling), 1L, hidden, inducing, settings, control$jitter, probit, seed)
  t_init <- proc.time()[["elapsed"]] - t0
  trace <- numeric()
  failures <- 0L
  done <- 0L
  adam <- list()
  call_seed <- function(j) as.double((seed + 7919 * j) %% .Machine$integer.max)
  for (e in seq_len(epochs)) {
    source(reset = TRUE)
    for (j in seq_along(steps)) {
      p <- prep(next_chunk(source, again = TRUE), scaling)
      if (steps[j] == 0) next
      settings$iterations <- steps[j]
      off <- done
      res <- .dgp_train(net, p$X, matrix(p$y), rep(1, length(p$y)), settings, threads,
                        call_seed((e - 1) * length(steps) + j), function(it, obj) monitor(off + it, obj), adam)
      net <- res$net
      adam <- res$adam
      trace <- c(trace, res$trace)
      failures <- failures + res$failures
      done <- done + res$iterations
    }
  }
  t_iter <- proc.time()[["elapsed"]] - t0 - t_init
  source(reset = TRUE)
  E <- 0
  for (j in seq_along(steps)) {
    p <- prep(next_chunk(source, again = TRUE), scaling)
    if (nrow(p$X) == 0) next
    E <- E + nrow(p$X) / n * .dgp_energy(net, p$X, matrix(p$y), seq_len(nrow(p$X)), n, threads, numeric(0), FALSE)$energy
  }
  elapsed <- proc.time()[["elapsed"]] - t0
  control$batch_size <- b
  control$epochs <- epochs
  fit <- dgp_fit_object(cl, formula, tt, xlev_in, contrasts, names(mom$mean), scaling, n, hidden, inducing, fam, ylev,
                        net, -E - jac, trace - jac, done,
                        sprintf("stopped after %d epoch%s over %d chunks, %d Adam steps", epochs,
                                if (epochs > 1) "s" else "", length(steps), done),
                        failures,
                        c(fit = elapsed, init = t_init, iterations = t_iter, final = elapsed - t_init - t_iter,
                          per_iteration = t_iter / max(1, done)),
                        control, opts, threads, seed)
  fit$chunks <- chunk_rows
  fit
}

#' Predictions of a deep Gaussian process
#'
#' The forward moment propagation of the fit with the posterior in place of
#' the cavity: the mean and variance of the output (and, with `layer`, of a
#' hidden layer's Gaussian).  `coef()`, `vcov()`, `anova()` and `simulate()`
#' are errors that say why: a deep GP has no linear coefficients or additive
#' terms, and its posterior gives each row's predictive moments, not joint
#' draws.
#'
#' @param object a fit made by [dgp()].
#' @param newdata a data frame with the inputs (default: the data of the fit;
#'   then, after `na.action = na.exclude`, the rows it dropped are `NA`); a
#'   row with a missing input predicts `NA`, as in [predict.gpgam()].
#' @param type `"link"` (the latent function) or `"response"`. For a
#'   Gaussian model the two are the same, as in [gpgam()] and mgcv's
#'   `predict.gam()`: the mean and sd of the latent output, without the
#'   output noise, so that a new observation is
#'   \eqn{N(fit, se.fit^2 + \sigma^2)}{N(fit, se.fit^2 + sigma^2)} with
#'   \eqn{\sigma}{sigma} = `sigma(object)`. Probit, `"response"`: the
#'   probability of the second level, \eqn{\Phi(m / \sqrt{1 + v})}{Phi(m /
#'   sqrt(1 + v))}, with the standard error by the delta method.
#' @param se.fit also return standard errors.
#' @param layer `NULL` (the output) or the number of a hidden layer: then a
#'   list of the `mean` and `var` matrices (rows x width) of that layer's
#'   Gaussian, on the internal (standardised) scale of the network.
#' @param ... nothing else is taken (an error names any argument given:
#'   there are no `interval` bands; `se.fit` gives each row's sd).
#' @return A vector of predictions, or with `se.fit` a list of `fit` and
#'   `se.fit`; with `layer`, a list of `mean` and `var` (matrices, a column
#'   per unit).  Named by the row names of `newdata` (rows of the matrices),
#'   as [predict.gpgam()] names its predictions.
#'   `sigma()`: the output layer's noise sd on the data scale (1 with
#'   probit).  A deep GP can carry noise in its hidden layers as well, which
#'   `se.fit` includes, so `sigma()` can be well below the residual sd.  So
#'   can a fit without hidden layers (`hidden = 0`): a FITC layer's variance
#'   correction \eqn{k(x, x) - q(x, x)}{k(x, x) - q(x, x)} can stand in for
#'   noise, and FITC is known to fit the noise too small and the correction
#'   instead (Bauer, van der Wilk and Rasmussen 2016), where [gpgam()]'s
#'   variational posterior keeps the noise in `sigma()`.  The sum
#'   \eqn{se.fit^2 + \sigma^2}{se.fit^2 + sigma^2}, the predictive variance
#'   of a new observation, is the better-identified quantity.
#'   `logLik()`: the approximate log marginal likelihood of the fit (attribute
#'   `approximate = TRUE`), with `df` the number of fitted parameters.
#' @examples
#' set.seed(1)
#' d <- data.frame(x = runif(100, -2, 2)); d$y <- sign(d$x) + rnorm(100, sd = 0.1)
#' fit <- dgp(y ~ x, data = d, inducing = 10,
#'            control = gp_control(iterations = 200, seed = 1, threads = 1, verbose = FALSE))
#' predict(fit, data.frame(x = c(-1, 0, 1)), type = "response", se.fit = TRUE)
#' predict(fit, data.frame(x = c(-1, 0, 1)), layer = 1)
#' @export
predict.dgp <- function(object, newdata, type = c("link", "response"), se.fit = FALSE, layer = NULL, ...) {
  no_dots("predict.dgp", list(...), "a deep GP's predictive is not Gaussian, so there are no 'interval' bands; se.fit = TRUE gives each row's mean and sd")
  type <- match_arg(type)
  L <- length(object$net$layers)
  if (!is.null(layer) && (!is.numeric(layer) || length(layer) != 1 || !(layer %in% seq_len(L - 1))))
    stop_arg("layer", "must be the number of a hidden layer (1 to ", L - 1, ") or NULL")
  # (at the fitting rows, padded with NA where na.action = na.exclude dropped rows, as predict.lm() pads)
  pad <- function(x) x
  if (missing(newdata) || is.null(newdata)) {
    if (is.null(object$model))
      stop_arg("newdata", "is needed: the fit keeps no model frame (",
               if (is.null(object$chunks)) "model = FALSE" else "data read in chunks", ")")
    newdata <- object$model
    pad <- function(x) stats::napredict(object$na.action, x)
  }
  X <- dgp_inputs(object, newdata)
  ok <- attr(X, "ok")
  # named by newdata's row names, as predict.lm() and predict.gam() name theirs
  rn <- rownames(newdata)
  if (!is.null(rn) && length(rn) == length(ok)) {
    pad0 <- pad
    pad <- function(x) {
      if (is.null(dim(x))) names(x) <- rn else rownames(x) <- rn
      pad0(x)
    }
  }
  p <- .dgp_predict(object$net, X, object$n, as.integer(object$control$threads %||% 1L))
  if (!all(ok)) {  # rows with a missing input: NA
    fill <- function(x) {
      out <- matrix(NA_real_, length(ok), ncol(x))
      out[ok, ] <- x
      out
    }
    p$mean <- lapply(p$mean, fill)
    p$var <- lapply(p$var, fill)
  }
  if (!is.null(layer)) return(list(mean = pad(p$mean[[layer]]), var = pad(p$var[[layer]])))
  ys <- object$scaling$y
  fit <- p$mean[[L]][, 1] * ys$scale + ys$center
  v <- p$var[[L]][, 1]
  if (isTRUE(object$net$probit)) {
    if (type == "response") {
      sc <- sqrt(1 + v)
      p <- stats::pnorm(fit / sc)
      if (!se.fit) return(pad(p))
      return(list(fit = pad(p), se.fit = pad(stats::dnorm(fit / sc) / sc * sqrt(v))))
    }
  } else v <- v - exp(2 * object$net$layers[[L]]$log_sn)  # the latent output: the noise out
  if (!se.fit) return(pad(fit))
  list(fit = pad(fit), se.fit = pad(sqrt(pmax(v, 0)) * ys$scale))
}

#' @rdname predict.dgp
#' @export
sigma.dgp <- function(object, ...) if (is.na(object$params$sigma)) 1 else object$params$sigma

#' @rdname predict.dgp
#' @export
logLik.dgp <- function(object, ...) {
  structure(object$objective, df = object$df, nobs = object$n, approximate = TRUE,
            label = "approximate log marginal likelihood (EP energy; Bui et al. 2016)", class = "logLik")
}

# What a deep GP fit does not have: mgcv's coefficient-level methods and
# simulate() (the approximate EP posterior gives each row's predictive mean
# and variance, not joint draws), each a clear error instead of an internal
# one from the methods of class "scalegp".
dgp_not_available <- function(what, instead) {
  stop(sprintf("%s is not available for a dgp() fit: %s", what, instead), call. = FALSE)
}

#' @rdname predict.dgp
#' @export
coef.dgp <- function(object, ...) {
  dgp_not_available("coef()", "its parameters are per layer (summary(fit) lists them)")
}

#' @rdname predict.dgp
#' @export
vcov.dgp <- function(object, ...) {
  dgp_not_available("vcov()", "it has no linear coefficients; predict(fit, se.fit = TRUE) gives the predictive sd")
}

#' @rdname predict.dgp
#' @export
anova.dgp <- function(object, ...) {
  dgp_not_available("anova()", "it has no additive terms; compare fits by logLik() (the approximate log marginal likelihood)")
}

#' @rdname predict.dgp
#' @param nsim,seed as [stats::simulate()] (not available: an error).
#' @export
simulate.dgp <- function(object, nsim = 1, seed = NULL, ...) {
  dgp_not_available("simulate()", "the approximate EP posterior gives each row's predictive mean and variance (predict(fit, se.fit = TRUE)), not joint draws")
}

# Per layer: inputs, outputs, kernel variance, lengthscales, noise sd, inducing points.
dgp_layers <- function(x) {
  nl <- length(x$net$layers)
  do.call(rbind, lapply(seq_len(nl), function(l) {
    ly <- x$net$layers[[l]]
    data.frame(layer = if (l == nl) "output" else paste("hidden", l), inputs = length(ly$log_ell),
               outputs = length(ly$Z), variance = exp(2 * ly$log_sf),
               lengthscales = paste(vapply(exp(ly$log_ell), format, "", digits = 3), collapse = ", "),
               noise_sd = if (l == nl && isTRUE(x$net$probit)) NA_real_ else exp(ly$log_sn), inducing = nrow(ly$Z[[1]]), stringsAsFactors = FALSE)
  }))
}

#' @export
print.dgp <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  print_header(x)
  ind <- if (length(unique(x$inducing)) == 1) paste(x$inducing[1], "inducing points per GP")
         else paste0("inducing points per GP by layer: ", paste(x$inducing, collapse = ", "))
  cat("Architecture: ", paste(c(length(x$inputs), x$hidden, 1), collapse = " -> "), ", ", ind, "\n", sep = "")
  if (x$likelihood == "gaussian")
    cat("sigma (the output layer's noise sd; hidden layers' noise is in se.fit): ", format(sigma(x), digits = digits),
        "\n", sep = "")
  cat(x$engine$objective, ": ", format(x$objective, digits = digits + 3), "\n", sep = "")
  cat("Fit: ", x$stop, "\n\n", sep = "")
  invisible(x)
}

#' Summary of a deep Gaussian process
#'
#' Per layer: the kernel variance, the ARD lengthscales (in units of the
#' layer's inputs: for the first layer the standardised inputs, or the data's
#' with `gp_control(scale_inputs = FALSE)`), the noise sd and the number of
#' inducing points per GP (internal, standardised scale); the parameters
#' held at their initial values (`gp_control(fixed = )`); the approximate
#' log marginal likelihood, the time and how the fit stopped.
#'
#' @param object a fit made by [dgp()].
#' @param x a `summary.dgp` object.
#' @param digits significant digits.
#' @param ... unused.
#' @return An object of class `summary.dgp`.
#' @export
summary.dgp <- function(object, ...) {
  fixed <- object$control$fixed
  if (isTRUE(object$net$probit)) fixed <- setdiff(fixed, "sigma")
  structure(list(call = object$call, layers = dgp_layers(object), objective = object$objective,
                 sigma = if (isTRUE(object$net$probit)) NULL else sigma(object), n = object$n, timing = object$timing, stop = object$stop,
                 inputs = object$inputs, scaled = !isFALSE(object$control$options$scale_inputs),
                 fixed = c(kernel = "kernel parameters", inducing = "inducing inputs",
                           sigma = "output noise")[fixed]),
            class = "summary.dgp")
}

#' @rdname summary.dgp
#' @export
print.summary.dgp <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("\nDeep Gaussian process by approximate EP (Bui et al. 2016)\nCall: ", deparse1(x$call), "\n", sep = "")
  cat("Inputs", if (!isFALSE(x$scaled)) " (standardised)", ": ", paste(x$inputs, collapse = ", "), "; n = ", x$n,
      "\n\n", sep = "")
  print(x$layers, digits = digits, row.names = FALSE)
  if (length(x$fixed)) cat("Held at their initial values: ", paste(x$fixed, collapse = ", "), "\n", sep = "")
  if (!is.null(x$sigma))
    cat("\nsigma (the output layer's noise sd, data scale; hidden layers' noise is in se.fit): ",
        format(x$sigma, digits = digits), "\n", sep = "")
  else cat("\n")
  cat("Approximate log marginal likelihood: ", format(x$objective, digits = digits + 3), "\n", sep = "")
  cat(sprintf("Time: %.2f s (%.2g s per iteration)\n", x$timing[["fit"]], x$timing[["per_iteration"]]))
  cat("Fit: ", x$stop, "\n\n", sep = "")
  invisible(x)
}

#' Plot a deep Gaussian process
#'
#' `which = "trace"`: the minibatch estimates of the approximate log marginal
#' likelihood per iteration.  `which = "fit"`: the predictive mean with
#' pointwise 95% bands (latent function, and a new observation) against one
#' input, the other inputs at their medians (factors at their first level),
#' with the data; for the probit family the predictive probability with the
#' latent output's 95% band mapped through the link.  `which = "warping"`: the first hidden layer's Gaussian
#' (mean and pointwise 95% band of each of its units, on the network's
#' standardised scale) against one input, the other inputs as for `"fit"`:
#' the learned warping of the inputs.
#'
#' @param x a fit made by [dgp()] (with its model frame for `"fit"` and
#'   `"warping"`).
#' @param which `"trace"`, `"fit"` or `"warping"` (needs a hidden layer).
#' @param input the variable of the data to plot against (default: the
#'   first numeric input).
#' @param n_grid points of the grid.
#' @param ... passed to [plot()].
#' @return `x`, invisibly.
#' @examples
#' set.seed(1)
#' d <- data.frame(x = runif(100, -2, 2)); d$y <- sign(d$x) + rnorm(100, sd = 0.1)
#' fit <- dgp(y ~ x, data = d, inducing = 10,
#'            control = gp_control(iterations = 200, seed = 1, threads = 1, verbose = FALSE))
#' plot(fit, which = "fit")
#' plot(fit, which = "warping")
#' @export
plot.dgp <- function(x, which = c("trace", "fit", "warping"), input = NULL, n_grid = 200, ...) {
  which <- match_arg(which)
  if (which == "trace") {
    graphics::plot(seq_along(x$trace), x$trace, type = "l", xlab = "iteration",
                   ylab = "approx. log marginal likelihood (minibatch estimate)", ...)
    return(invisible(x))
  }
  if (which == "warping" && length(x$hidden) == 0)
    stop_arg("which", "\"warping\" needs a hidden layer; this fit has none (hidden = 0)")
  if (is.null(x$model))
    stop_arg("x", "keeps no model frame (", if (is.null(x$chunks)) "fit with model = TRUE" else "fitted to data read in chunks",
             "), which which = \"", which, "\" draws")
  mf <- x$model
  vars <- all.vars(x$terms)
  num <- vars[vapply(vars, function(v) is.numeric(mf[[v]]), TRUE)]
  input <- input %||% num[1]
  if (!is.character(input) || length(input) != 1 || !(input %in% num))
    stop_arg("input", "must name a numeric input of the fit")
  nd <- mf[rep(1, n_grid), vars, drop = FALSE]
  for (v in vars) nd[[v]] <- if (is.numeric(mf[[v]])) stats::median(mf[[v]]) else factor(levels(mf[[v]])[1], levels(mf[[v]]))
  nd[[input]] <- seq(min(mf[[input]]), max(mf[[input]]), length.out = n_grid)
  if (which == "warping") {
    h <- stats::predict(x, nd, layer = 1)
    lo <- h$mean - 1.96 * sqrt(h$var)
    hi <- h$mean + 1.96 * sqrt(h$var)
    cols <- grDevices::palette.colors(max(2, ncol(h$mean)), "Okabe-Ito")[seq_len(ncol(h$mean))]
    graphics::matplot(nd[[input]], h$mean, type = "l", lty = 1, lwd = 2, col = cols, ylim = range(lo, hi),
                      xlab = input, ylab = "hidden layer 1 (standardised)", ...)
    graphics::matlines(nd[[input]], lo, lty = 2, col = cols)
    graphics::matlines(nd[[input]], hi, lty = 2, col = cols)
    if (ncol(h$mean) > 1)
      graphics::legend("topleft", legend = paste("unit", seq_len(ncol(h$mean))), col = cols, lty = 1, bty = "n")
    return(invisible(x))
  }
  pl <- stats::predict(x, nd, type = "link", se.fit = TRUE)
  if (isTRUE(x$net$probit)) {
    # the predictive probability, and the latent output's 95% band through
    # the link (within [0, 1])
    pr <- stats::predict(x, nd, type = "response")
    graphics::plot(mf[[input]], x$y, xlab = input, ylab = deparse1(x$formula[[2]]), ylim = c(0, 1),
                   col = "grey50", pch = 16, cex = 0.5, ...)
    graphics::lines(nd[[input]], stats::pnorm(pl$fit + 1.96 * pl$se.fit), lty = 2)
    graphics::lines(nd[[input]], stats::pnorm(pl$fit - 1.96 * pl$se.fit), lty = 2)
    graphics::lines(nd[[input]], pr, lwd = 2)
    return(invisible(x))
  }
  # a new observation: N(fit, se.fit^2 + sigma^2)
  sd_new <- sqrt(pl$se.fit^2 + stats::sigma(x)^2)
  new_lo <- pl$fit - 1.96 * sd_new
  new_hi <- pl$fit + 1.96 * sd_new
  yr <- range(x$y, new_lo, new_hi)
  graphics::plot(mf[[input]], x$y, xlab = input, ylab = deparse1(x$formula[[2]]), ylim = yr,
                 col = "grey50", pch = 16, cex = 0.5, ...)
  graphics::lines(nd[[input]], new_hi, lty = 3)
  graphics::lines(nd[[input]], new_lo, lty = 3)
  graphics::lines(nd[[input]], pl$fit + 1.96 * pl$se.fit, lty = 2)
  graphics::lines(nd[[input]], pl$fit - 1.96 * pl$se.fit, lty = 2)
  graphics::lines(nd[[input]], pl$fit, lwd = 2)
  invisible(x)
}

# A warning naming the gp_control() settings that dgp() does not use, when
# they differ from gp_control()'s defaults (and any option of a gpgam()
# engine given); with the probit family, also `sigma` and fixed = "sigma"
# (no output noise).
warn_dgp_unused_control <- function(control, probit = FALSE) {
  dflt <- gp_control(verbose = FALSE)
  unused <- c("inducing", "tol", "patience", "gh_points", if (probit) "sigma")
  set <- unused[!vapply(unused, function(nm) identical(control[[nm]], dflt[[nm]]), TRUE)]
  if (probit && "sigma" %in% control$fixed) set <- c(set, "fixed")
  set <- c(set, intersect(setdiff(names(control), c(names(dflt), names(formals(dgp_options)))), engine_option_names()))
  if (length(set) == 0) return(invisible())
  hints <- c(inducing = "use dgp(inducing = ) for the inducing points per layer",
             sigma = "a probit model has no output noise", fixed = "a probit model has no output noise to fix",
             tol = "a dgp() fit runs its iterations, with no stopping test",
             patience = "a dgp() fit runs its iterations, with no stopping test", gh_points = "dgp() needs no quadrature")
  h <- unique(stats::na.omit(hints[set]))
  warning("dgp() does not use gp_control(", paste0(set, " = ", collapse = ", "), "): ignored",
          if (length(h)) paste0(" (", paste(h, collapse = "; "), ")"), call. = FALSE)
  invisible()
}
