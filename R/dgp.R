# dgp(): deep Gaussian processes trained by approximate expectation
# propagation (Bui et al. 2016; C++ core inst/include/scalegp/dgp.hpp), and
# its methods: print, summary, predict, sigma, logLik, plot.  Families:
# gaussian() and binomial(link = "probit").

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
#' standardised, as is the response; every reported number is on the scale
#' of the data.  Initialisation follows the authors' code: first-layer
#' inducing inputs by k-means, lengthscales the median distance between
#' inputs; later layers long lengthscales and inducing inputs on
#' \eqn{[-1, 1]}; noise sd 0.1; small random factors.
#'
#' The fit is stochastic: it runs `gp_control(iterations = )` Adam steps
#' (or `epochs` passes) and stops; no stationary point is checked, and
#' `converged` is `FALSE`.  A step that makes the energy non-finite is
#' undone and the learning rate halved (at most 10 times; `fit$stop` says
#' how many).  The reported objective is the approximate log
#' marginal likelihood on all rows at the end.
#'
#' @param formula a formula `y ~ x1 + x2 + ...` (a numeric response; the
#'   right-hand side as in [lm()]).
#' @param data a data frame.
#' @param hidden the widths of the hidden layers, one positive integer per
#'   hidden layer: the default `hidden = 2` is one hidden layer of two
#'   dimensions (the paper's DGP-2), `hidden = c(3, 2)` two hidden layers;
#'   `hidden = 0` (or `integer(0)`) no hidden layer, a sparse (FITC) GP
#'   trained on the same energy (the paper's GP baseline).  A hidden layer of
#'   width 1 is a bottleneck (all inputs pass through one number): in Bui et
#'   al. (2016) it predicted worse than the GP on most data sets, which is
#'   why the default is 2.
#' @param inducing number of inducing points of every GP (at most the number
#'   of rows), or one number per layer (hidden layers first, then the
#'   output layer).
#' @param family `gaussian()`, or `binomial(link = "probit")` for a 0/1,
#'   logical or two-level factor response (the last layer then has no noise).
#' @param control a [gp_control()] object; `dgp()` reads `batch_size`
#'   (default 50), `iterations`, `epochs`, `learning_rate`, `threads`, `seed`,
#'   `verbose` and `jitter` (added to the diagonal of each GP's inducing
#'   covariance).  It learns every parameter and has no stopping test, so a
#'   control that sets `fixed`, `sigma`, `inducing` (use the `inducing`
#'   argument), `tol`, `patience`, `gh_points` or an option of a [gpgam()]
#'   engine draws a warning that it is ignored (it puts no priors on its
#'   parameters whatever `priors` says).
#' @param weights optional positive prior weights (Gaussian family): row i's
#'   output noise variance is \eqn{\sigma^2 / w_i}{sigma^2 / w_i}, as in
#'   [gpgam()] and [lm()]; a row with weight 2 counts as the mean of two
#'   observations.  Not supported with the probit family.
#' @param subset optional subset of rows, as in [lm()].
#' @param na.action what to do with missing values (default
#'   `getOption("na.action")`).
#' @param model keep the model frame in the fit (needed by `plot(fit, which = "fit")`).
#' @return An object of class `c("dgp", "scalegp")`; see [predict.dgp()],
#'   [summary.dgp()] and [plot.dgp()].
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
#' @export
dgp <- function(formula, data, hidden = 2, inducing = 50, family = gaussian(), control = gp_control(),
                weights, subset, na.action, model = TRUE) {
  cl <- match.call()
  if (!inherits(formula, "formula") || length(formula) != 3)
    stop_arg("formula", "must be a two-sided formula such as y ~ x1 + x2")
  if (!is.numeric(hidden) || any(!is.finite(hidden)) || any(hidden != round(hidden)) || any(hidden < 0) ||
      (length(hidden) > 1 && any(hidden == 0)))
    stop_arg("hidden", "must be positive integers (the widths of the hidden layers), or 0 for none, not ",
             deparse1(hidden))
  hidden <- as.integer(hidden[hidden > 0])
  n_layers <- length(hidden) + 1L
  if (!is.numeric(inducing) || !(length(inducing) %in% c(1L, n_layers)))
    stop_arg("inducing", "must be one count, or one per layer (", n_layers, " here)")
  for (i in seq_along(inducing)) check_count(inducing[i], "inducing")
  inducing <- rep_len(as.integer(inducing), n_layers)
  fam <- likelihood_name(family)
  if (!fam$lik %in% c("gaussian", "probit"))
    stop_arg("family", "must be gaussian() or binomial(link = \"probit\") for dgp()")
  probit <- fam$lik == "probit"
  if (!inherits(control, "gp_control")) {
    if (is.list(control)) control <- do.call(gp_control, control)
    else stop_arg("control", "must be made by gp_control()")
  }
  warn_dgp_unused_control(control)
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
    y <- prepare_response(y, "probit")
    ylevels <- attr(y, "levels")
    y <- as.numeric(y)
    if (any(y != 0 & y != 1)) stop_arg("formula", "needs a 0/1, logical or two-level factor response with binomial()")
  } else {
    if (!is.numeric(y)) stop_arg("formula", "must have a numeric response with gaussian()")
    y <- as.numeric(y)
  }
  check_finite_columns(mf, names(mf), "data")
  tt <- stats::delete.response(stats::terms(mf))
  X <- stats::model.matrix(tt, mf)
  contrasts <- attr(X, "contrasts")
  X <- X[, colnames(X) != "(Intercept)", drop = FALSE]
  if (ncol(X) == 0) stop_arg("formula", "has no inputs on its right-hand side")
  xsd <- apply(X, 2, stats::sd)
  if (any(!(xsd > 0)))
    stop_arg("data", "input column(s) ", paste0("'", colnames(X)[!(xsd > 0)], "'", collapse = ", "),
             " are constant: they cannot inform a kernel; drop them from the formula")
  if (inducing[1] > n) stop_arg("inducing", "(", inducing[1], " in the first layer) exceeds the number of rows (", n, ")")
  ysd <- stats::sd(y)
  if (!(ysd > 0)) stop_arg("formula", "has a constant response")
  if (probit) ysd <- 1
  scaling <- list(x = list(center = colMeans(X), scale = xsd), y = list(center = if (probit) 0 else mean(y), scale = ysd))
  Xs <- sweep(sweep(X, 2, scaling$x$center), 2, scaling$x$scale, "/")
  b <- min(n, control$batch_size %||% 50L)
  iterations <- if (!is.null(control$epochs)) as.integer(min(.Machine$integer.max, ceiling(control$epochs * n / b)))
                else control$iterations
  threads <- as.integer(control$threads %||% RcppParallel::defaultNumThreads())
  seed <- control$seed %||% sample.int(.Machine$integer.max, 1)
  settings <- list(jitter = control$jitter, batch_size = b, iterations = as.integer(iterations),
                   learning_rate = control$learning_rate, tol = control$tol, patience = control$patience,
                   learn_inducing = TRUE, learn_noise = TRUE)
  jac <- n * log(ysd)  # log-Jacobian of the response standardisation
  control$iterations <- as.integer(iterations)
  control$priors <- FALSE  # dgp() puts no priors on its parameters (and the progress bar must not say so)
  monitor <- progress_monitor(control, "approx. log ML (minibatch)", shift = jac)
  t0 <- proc.time()[["elapsed"]]
  yint <- if (probit) 2 * y - 1 else (y - scaling$y$center) / ysd
  res <- .dgp_fit(Xs, matrix(yint), w, hidden, inducing, settings,
                  control$jitter, probit, threads, seed, monitor)
  elapsed <- proc.time()[["elapsed"]] - t0
  L <- length(res$net$layers)
  eta <- res$fitted$mean[[L]][, 1] * ysd + scaling$y$center
  fm <- if (probit) stats::pnorm(eta / sqrt(1 + res$fitted$var[[L]][, 1])) else eta
  control$batch_size <- b
  control$threads <- threads
  control$seed <- seed
  fit <- list(call = cl, formula = formula, terms = tt, xlevels = stats::.getXlevels(tt, mf), contrasts = contrasts,
              inputs = colnames(X), scaling = scaling, n = n, hidden = as.integer(hidden),
              inducing = as.integer(inducing), family = if (probit) stats::binomial("probit") else stats::gaussian(),
              likelihood = fam$lik, ylevels = if (probit) ylevels,
              net = res$net, objective = res$objective - jac, trace = res$trace - jac,
              iterations = res$iterations, converged = FALSE,
              stop = paste0(sprintf("stopped by %s after %d Adam steps (a stochastic fit: no convergence check)",
                                    res$stop, res$iterations),
                            if (res$failures > 0)
                              sprintf("; %d step%s undone after a non-finite energy, the learning rate halved each time",
                                      res$failures, if (res$failures > 1) "s" else "")),
              y = y, fitted.values = fm, linear.predictors = eta, prior.weights = w,
              params = list(sigma = if (probit) NA_real_ else exp(res$net$layers[[L]]$log_sn) * ysd),
              df = dgp_n_params(res$net),
              timing = c(fit = elapsed, res$seconds, per_iteration = res$seconds[["iterations"]] / max(1, res$iterations)),
              control = control, na.action = attr(mf, "na.action"),
              title = "Deep Gaussian process",
              engine = list(name = "dgp", label = "approximate EP, Bui et al. 2016",
                            objective = "Approximate log marginal likelihood"))
  if (model) fit$model <- mf
  class(fit) <- c("dgp", "scalegp")
  fit
}

# Number of free parameters of a network (kernel, noise, inducing inputs, factors).
dgp_n_params <- function(net) {
  sum(vapply(net$layers, function(ly) length(ly$log_ell) + 2 + sum(lengths(ly$Z)) + sum(lengths(ly$rho)) +
               sum(lengths(ly$tau)), 1))
}

# The standardised inputs of `newdata` for a dgp fit.
dgp_inputs <- function(object, newdata) {
  if (!is.data.frame(newdata)) stop_arg("newdata", "must be a data frame")
  mf <- stats::model.frame(object$terms, newdata, xlev = object$xlevels, na.action = stats::na.pass)
  miss <- names(mf)[vapply(mf, anyNA, TRUE)]
  if (length(miss)) stop_arg("newdata", "has missing values in ", paste0("'", miss, "'", collapse = ", "))
  X <- stats::model.matrix(object$terms, mf, contrasts.arg = object$contrasts)
  X <- X[, object$inputs, drop = FALSE]
  if (any(!is.finite(X))) stop_arg("newdata", "has non-finite values")
  sweep(sweep(X, 2, object$scaling$x$center), 2, object$scaling$x$scale, "/")
}

#' Predictions of a deep Gaussian process
#'
#' The forward moment propagation of the fit with the posterior in place of
#' the cavity: the mean and variance of the output (and, with `layer`, of a
#' hidden layer's Gaussian).
#'
#' @param object a fit made by [dgp()].
#' @param newdata a data frame with the inputs (default: the data of the fit).
#' @param type `"link"` (the latent function: variance without the output
#'   noise) or `"response"` (Gaussian: a new observation, variance with the
#'   noise, the same mean; probit: the probability of the second level,
#'   \eqn{\Phi(m / \sqrt{1 + v})}{Phi(m / sqrt(1 + v))}, with the standard
#'   error by the delta method).
#' @param se.fit also return standard errors.
#' @param layer `NULL` (the output) or the number of a hidden layer: then a
#'   list of the `mean` and `var` matrices (rows x width) of that layer's
#'   Gaussian, on the internal (standardised) scale of the network.
#' @param ... unused.
#' @return A vector of predictions, or with `se.fit` a list of `fit` and
#'   `se.fit`; with `layer`, a list of `mean` and `var`.
#'   `sigma()`: the output noise sd on the data scale (1 with probit).
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
  type <- match.arg(type)
  L <- length(object$net$layers)
  if (!is.null(layer) && (!is.numeric(layer) || length(layer) != 1 || !(layer %in% seq_len(L - 1))))
    stop_arg("layer", "must be the number of a hidden layer (1 to ", L - 1, ") or NULL")
  if (missing(newdata) || is.null(newdata)) {
    if (is.null(object$model)) stop_arg("newdata", "is needed: the fit keeps no model frame (model = FALSE)")
    newdata <- object$model
  }
  p <- .dgp_predict(object$net, dgp_inputs(object, newdata), object$n,
                    as.integer(object$control$threads %||% 1L))
  if (!is.null(layer)) return(list(mean = p$mean[[layer]], var = p$var[[layer]]))
  ys <- object$scaling$y
  fit <- p$mean[[L]][, 1] * ys$scale + ys$center
  v <- p$var[[L]][, 1]
  if (isTRUE(object$net$probit)) {
    if (type == "response") {
      sc <- sqrt(1 + v)
      p <- stats::pnorm(fit / sc)
      if (!se.fit) return(p)
      return(list(fit = p, se.fit = stats::dnorm(fit / sc) / sc * sqrt(v)))
    }
  } else if (type == "link") v <- v - exp(2 * object$net$layers[[L]]$log_sn)
  if (!se.fit) return(fit)
  list(fit = fit, se.fit = sqrt(pmax(v, 0)) * ys$scale)
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

# Per layer: inputs, outputs, kernel variance, lengthscales, noise sd, inducing points.
dgp_layers <- function(x) {
  nl <- length(x$net$layers)
  do.call(rbind, lapply(seq_len(nl), function(l) {
    ly <- x$net$layers[[l]]
    data.frame(layer = if (l == nl) "output" else paste("hidden", l), inputs = length(ly$log_ell),
               outputs = length(ly$Z), variance = exp(2 * ly$log_sf),
               lengthscales = paste(format(exp(ly$log_ell), digits = 3), collapse = ", "),
               noise_sd = if (l == nl && isTRUE(x$net$probit)) NA_real_ else exp(ly$log_sn), inducing = nrow(ly$Z[[1]]), stringsAsFactors = FALSE)
  }))
}

#' @export
print.dgp <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  print_header(x)
  ind <- if (length(unique(x$inducing)) == 1) paste(x$inducing[1], "inducing points per GP")
         else paste0("inducing points per GP by layer: ", paste(x$inducing, collapse = ", "))
  cat("Architecture: ", paste(c(length(x$inputs), x$hidden, 1), collapse = " -> "), ", ", ind, "\n", sep = "")
  if (x$likelihood == "gaussian") cat("sigma: ", format(sigma(x), digits = digits), "\n", sep = "")
  cat(x$engine$objective, ": ", format(x$objective, digits = digits + 3), "\n", sep = "")
  cat("Fit: ", x$stop, "\n\n", sep = "")
  invisible(x)
}

#' Summary of a deep Gaussian process
#'
#' Per layer: the kernel variance, the ARD lengthscales (on the standardised
#' inputs of the layer), the noise sd and the number of inducing points per
#' GP (internal, standardised scale); the approximate log marginal
#' likelihood, the time and how the fit stopped.
#'
#' @param object a fit made by [dgp()].
#' @param x a `summary.dgp` object.
#' @param digits significant digits.
#' @param ... unused.
#' @return An object of class `summary.dgp`.
#' @export
summary.dgp <- function(object, ...) {
  structure(list(call = object$call, layers = dgp_layers(object), objective = object$objective,
                 sigma = sigma(object), n = object$n, timing = object$timing, stop = object$stop,
                 inputs = object$inputs), class = "summary.dgp")
}

#' @rdname summary.dgp
#' @export
print.summary.dgp <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("\nDeep Gaussian process by approximate EP (Bui et al. 2016)\nCall: ", deparse1(x$call), "\n", sep = "")
  cat("Inputs (standardised): ", paste(x$inputs, collapse = ", "), "; n = ", x$n, "\n\n", sep = "")
  print(x$layers, digits = digits, row.names = FALSE)
  cat("\nsigma (data scale): ", format(x$sigma, digits = digits), "\n", sep = "")
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
#' with the data.  `which = "warping"`: the first hidden layer's Gaussian
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
  which <- match.arg(which)
  if (which == "trace") {
    graphics::plot(seq_along(x$trace), x$trace, type = "l", xlab = "iteration",
                   ylab = "approx. log marginal likelihood (minibatch estimate)", ...)
    return(invisible(x))
  }
  if (which == "warping" && length(x$hidden) == 0)
    stop_arg("which", "\"warping\" needs a hidden layer; this fit has none (hidden = 0)")
  if (is.null(x$model)) stop_arg("x", "keeps no model frame (fit with model = TRUE)")
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
  pr <- stats::predict(x, nd, type = "response", se.fit = TRUE)
  yr <- range(x$y, pr$fit + 2 * pr$se.fit, pr$fit - 2 * pr$se.fit)
  graphics::plot(mf[[input]], x$y, xlab = input, ylab = deparse1(x$formula[[2]]), ylim = yr,
                 col = "grey50", pch = 16, cex = 0.5, ...)
  graphics::lines(nd[[input]], pr$fit + 1.96 * pr$se.fit, lty = 3)
  graphics::lines(nd[[input]], pr$fit - 1.96 * pr$se.fit, lty = 3)
  graphics::lines(nd[[input]], pl$fit + 1.96 * pl$se.fit, lty = 2)
  graphics::lines(nd[[input]], pl$fit - 1.96 * pl$se.fit, lty = 2)
  graphics::lines(nd[[input]], pl$fit, lwd = 2)
  invisible(x)
}

# A warning naming the gp_control() settings that dgp() does not use, when
# they differ from gp_control()'s defaults (and any engine option given).
warn_dgp_unused_control <- function(control) {
  dflt <- gp_control(verbose = FALSE)
  unused <- c("fixed", "sigma", "inducing", "tol", "patience", "gh_points")
  set <- unused[!vapply(unused, function(nm) identical(control[[nm]], dflt[[nm]]), TRUE)]
  set <- c(set, intersect(setdiff(names(control), names(dflt)), engine_option_names()))
  if (length(set) == 0) return(invisible())
  hints <- c(inducing = "use dgp(inducing = ) for the inducing points per layer",
             fixed = "dgp() learns every parameter", sigma = "dgp() estimates the noise of every layer",
             tol = "a dgp() fit runs its iterations, with no stopping test",
             patience = "a dgp() fit runs its iterations, with no stopping test", gh_points = "dgp() needs no quadrature")
  h <- unique(stats::na.omit(hints[set]))
  warning("dgp() does not use gp_control(", paste0(set, " = ", collapse = ", "), "): ignored",
          if (length(h)) paste0(" (", paste(h, collapse = "; "), ")"), call. = FALSE)
  invisible()
}
