# The objective of a fit as a function of its hyperparameters (lme4's
# devfun): the model set up again from the fit's model frame, the engine run
# for no iteration at the given values, so that the objective and its
# gradient are those the fit's optimiser sees.

#' The objective of a fit as a function of its hyperparameters
#'
#' As lme4's `devfun`: returns a function that evaluates, at given kernel
#' hyperparameters and noise, the objective the fit maximised, with the
#' engine's inner state optimal there (the posterior q of the inducing
#' variables for `inference = "vi"`, the EP sites at their fixed point for
#' `inference = "ep"`), and its gradient.  The objective is the ELBO (or the
#' EP log evidence) on the scale of the data plus the log prior of the
#' hyperparameters (zero with `gp_control(priors = FALSE)`): `fit$objective
#' + fit$log_prior` at the fitted values.  The inducing inputs are held at
#' their fitted values.
#'
#' The parameters are on the scale the fit moves them: per `gp()` term with
#' an estimated kernel its log variance and log lengthscales (of the
#' standardised response and inputs), then the likelihood's own parameter
#' when the fit estimates it: the log noise variance of a Gaussian model (of
#' the standardised response), the log shape of a Gamma model, the log theta
#' of a negative binomial model, the log squared scale of a scaled t (of the
#' standardised response) followed by its `log(df - min.df)`;
#' `attr(f, "start")` holds the fitted values with their names.
#'
#' @param fit a full-batch fit made by [gpgam()] with `inference = "vi"` or
#'   `"ep"`, with its model frame.
#' @return A function of a numeric vector `theta` returning a list with
#'   `objective` and `gradient` (named as `theta`).
#' @examples
#' set.seed(1)
#' d <- data.frame(x = runif(100)); d$y <- sin(6 * d$x) + rnorm(100, sd = 0.2)
#' fit <- gpgam(y ~ gp(x), data = d, control = gp_control(inducing = 10, verbose = FALSE))
#' f <- gp_objective(fit)
#' theta <- attr(f, "start")
#' f(theta)                      # the gradient is near zero at the fit
#' f(theta + c(0.5, 0, 0))$objective < f(theta)$objective
#' @export
gp_objective <- function(fit) {
  if (!inherits(fit, "gpgam")) stop_arg("fit", "must be a gpgam fit")
  if (!fit$engine$name %in% c("vi", "ep"))
    stop_arg("fit", "was fitted with inference = \"", fit$engine$name, "\"; gp_objective() serves \"vi\" and \"ep\" fits")
  if (fit$control$batch_size < fit$n)
    stop_arg("fit", "was fitted on minibatches; gp_objective() needs a fit over all rows")
  if (is.null(fit$model)) stop_arg("fit", "was fitted with model = FALSE; gp_objective() needs the model frame")
  engine <- fit$engine
  control <- fit$control
  control$iterations <- 0L
  control$verbose <- FALSE
  control$fixed <- union(control$fixed, "inducing")
  parsed <- parse_gpgam_formula(fit$formula, fit$model)
  # (the setup's warnings were given when the fit was made)
  setup <- suppressWarnings(gp_setup(parsed, fit$model, likelihood_name(fit$family), control))
  # the fitted kernels and inducing inputs; the noise
  setup$comps <- fit$state$specs
  setup$log_noise <- fit$state$log_noise
  if (!is.null(fit$state$log_df)) setup$log_df <- fit$state$log_df
  learned <- which(vapply(setup$comps, function(s) isTRUE(s$learn_kernel), TRUE))
  noise <- learns_lik_param(setup, control)  # the likelihood's own parameter, when estimated
  ldf <- learns_lik_df(setup)                # the scaled t's log(df - min_df), when estimated
  start <- c(unlist(lapply(learned, function(i) c(setup$comps[[i]]$log_var, setup$comps[[i]]$log_ls))),
             if (noise) setup$log_noise, if (ldf) setup$log_df)
  names(start) <- c(unlist(lapply(learned, function(i) kernel_parameter_names(fit, i))),
                    if (noise) lik_param_label(setup$lik), if (ldf) "log(df - min_df)")
  shift <- objective_shift(setup)
  f <- function(theta) {
    if (!is.numeric(theta) || length(theta) != length(start) || any(!is.finite(theta)))
      stop_arg("theta", "must be ", length(start), " finite numbers (see attr(f, \"start\"))")
    at <- setup
    k <- 0L
    for (i in learned) {
      s <- at$comps[[i]]
      s$log_var <- theta[k + 1L]
      nl <- length(s$log_ls)
      if (nl) s$log_ls <- unname(theta[k + 1L + seq_len(nl)])
      at$comps[[i]] <- s
      k <- k + 1L + nl
    }
    if (noise) at$log_noise <- unname(theta[k + 1L])
    if (ldf) at$log_df <- unname(theta[length(theta)])
    res <- engine_fit(engine, at, control)
    g <- res$gradient
    if (length(g) != length(start))
      stop("the engine returned ", length(g), " gradient entries for ", length(start), " parameters", call. = FALSE)
    list(objective = res$objective + (res$log_prior %||% 0) - shift, gradient = stats::setNames(g, names(start)))
  }
  attr(f, "start") <- start
  f
}
