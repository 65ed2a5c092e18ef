# S3 methods of every fit.  Those on "scalegp" need only the engine-neutral
# fields (objective, trace, likelihood, fitted values, ...), so any model of
# the package (gpgam() fits, and dgp() fits to come) gets them; those on
# "gpgam" use the additive terms and the posterior of the parametric
# coefficients.

#' @export
print.scalegp <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  print_header(x)
  print_objective(x, digits)
  invisible(x)
}

#' @export
print.gpgam <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  print_header(x)
  for (g in x$params$gp)
    cat(sprintf("%s: %s%s, %d %s, variance %s%s, edf %s\n", g$label, g$kernel,
                if (g$type == "factor") " random effect" else if (g$type == "centred") " kernel (centred)"
                else if (g$type == "hilbert") " kernel (Hilbert basis)" else " kernel",
                g$basis, if (g$type == "hilbert") "basis functions" else x$engine$basis, format(g$variance, digits = digits),
                if (length(g$lengthscale)) paste0(", lengthscale ", paste(vapply(g$lengthscale, format, "", digits = digits),
                                                                           collapse = ", ")) else "",
                format(g$edf, digits = digits)))
  cf <- coef(x)
  if (length(cf)) {
    cat("Coefficients:\n")
    print(cf, digits = digits)
  }
  if (x$likelihood == "gaussian") cat("sigma: ", format(x$params$sigma, digits = digits), "\n", sep = "")
  cat(lik_param_line(x, digits))
  print_objective(x, digits)
  invisible(x)
}

print_header <- function(x) {
  cat("\n", x$title %||% "Gaussian-process model", " (", engine_label(x), ")\n", sep = "")
  cat("Formula: ", deparse1(x$formula), "\n", sep = "")
  cat("Family: ", x$family$family, " (", link_name(x), "), n = ", x$n, "\n", sep = "")
}

print_objective <- function(x, digits) {
  cat(x$engine$objective, ": ", format(x$objective, digits = digits + 3),
      if (!x$converged) paste0(" (NOT converged: ", x$stop %||% "stopping rule not met", ")"), "\n\n", sep = "")
}

link_name <- function(x) switch(x$likelihood, gaussian = "identity", probit = "probit",
                                logit = "logit", poisson = "log", gamma = "log", negbin = "log",
                                scat = "identity")

# The line of print() and summary() on the Gamma shape, the negative
# binomial theta or the scaled t's scale and df ("" for the other families).
lik_param_line <- function(x, digits) {
  p <- x$params
  if (!is.null(p$df))
    return(paste0("scale: ", format(p$sigma, digits = digits), ", df: ", format(p$df, digits = digits),
                  if (isTRUE(p$theta_fixed)) " (given)", "\n"))
  if (!is.null(p$shape))
    return(paste0("shape: ", format(p$shape, digits = digits), " (scale = 1/shape = ",
                  format(1 / p$shape, digits = digits), ")\n"))
  if (!is.null(p$theta))
    return(paste0("theta: ", format(p$theta, digits = digits), if (isTRUE(p$theta_fixed)) " (given)", "\n"))
  ""
}

#' Methods for scalegp fits
#'
#' `coef()` and `vcov()` give the posterior mean and covariance of the
#' parametric coefficients; with `full = TRUE`, of all the weights of the
#' model, on the data scale: the parametric coefficients, then per `gp()`
#' term the weights of its basis (named `"gp(x).1"`, `"gp(x).2"`, ... as
#' mgcv names the coefficients of a smooth), the weights that
#' `predict(type = "lpmatrix")` maps to the linear predictor (see
#' [predict.gpgam()]); `sigma()` the residual sd of a Gaussian model, the
#' square root of the scale `1 / shape` (the coefficient of variation) of a
#' Gamma model, 1 otherwise (as `sigma()` of a [glm()]: the square root of
#' the dispersion); `logLik()` the objective the engine maximised (its name is in
#' `fit$engine$objective`): for `inference = "vi"` the ELBO, a lower bound on
#' the log marginal likelihood (equal to it for a Gaussian fit whose terms all
#' have fixed bases, `gp(basis = "hilbert")`, factor and linear terms; the
#' summary says which), for `inference = "ep"` the EP estimate of the
#' log marginal likelihood, with `df` the number of estimated
#' hyperparameters plus parametric coefficients (the likelihood of the data
#' as given: for binomial counts, `cbind(successes, failures)` or proportions
#' with the trials as weights, with their binomial coefficients, as
#' [glm()]'s); `fitted()` the posterior
#' mean response at the data; `terms()` the terms of the model frame (all
#' variables of the formula, as [mgcv::gam()]'s); `model.matrix()` the
#' lpmatrix, `predict(fit, type = "lpmatrix", ...)` (of the fitting rows
#' unless `newdata` is given, as mgcv's); `nobs()` the rows with a non-zero prior
#' weight (as for a [glm()]); `residuals()` the residuals of the types glm
#' users expect (see Details); `family()` the glm family of the fit (for the
#' negative binomial, a glm family at the fitted or given theta, as
#' `MASS::negative.binomial(theta)`).
#'
#' @param object a fit made by [gpgam()].
#' @param type residual type.
#' @param full `coef()`, `vcov()`: `FALSE` (default) for the parametric
#'   coefficients, `TRUE` for all the weights of the model (the parametric
#'   coefficients and the `gp()` terms' basis weights, as mgcv's `coef()` and
#'   `vcov()` of a gam).  For `inference = "decoupled"` the last weight is
#'   that of the column `"gp(...).mean"` of the lpmatrix (the mean bases'
#'   part of the term), fixed at 1 with variance 0.  Not available for
#'   `inference = "qsgp"`.
#' @param ... unused.
#' @name gpgam-methods
#' @examples
#' set.seed(4)
#' d <- data.frame(x = runif(150), z = rnorm(150))
#' d$y <- sin(5 * d$x) + 2 * d$z + rnorm(150, sd = 0.2)
#' fit <- gpgam(y ~ gp(x) + z, data = d, control = gp_control(inducing = 10, iterations = 200))
#' coef(fit); sigma(fit); logLik(fit); nobs(fit)
#' length(coef(fit, full = TRUE)); dim(vcov(fit, full = TRUE))
#' head(fitted(fit)); head(residuals(fit))
NULL

#' @rdname gpgam-methods
#' @export
coef.gpgam <- function(object, full = FALSE, ...) {
  if (check_flag(full, "full")) weight_posterior(object)$coef else param_posterior(object)$coef
}

#' @rdname gpgam-methods
#' @export
vcov.gpgam <- function(object, full = FALSE, ...) {
  if (check_flag(full, "full")) weight_posterior(object)$vcov else param_posterior(object)$vcov
}

# A single TRUE or FALSE, else an error naming the argument.
check_flag <- function(x, name) {
  if (!is.logical(x) || length(x) != 1 || is.na(x)) stop_arg(name, "must be TRUE or FALSE")
  x
}

#' @rdname gpgam-methods
#' @export
sigma.scalegp <- function(object, ...) {
  if (!is.na(object$params$sigma)) object$params$sigma else if (!is.null(object$params$shape))
    1 / sqrt(object$params$shape) else 1
}

#' @rdname gpgam-methods
#' @export
logLik.scalegp <- function(object, ...) {
  structure(object$objective, df = object$df, nobs = stats::nobs(object), class = "logLik")
}

#' @rdname gpgam-methods
#' @export
terms.gpgam <- function(x, ...) {
  # the model frame's terms (every variable, the gp() inputs included), as
  # terms.gam(); stored by gpgam() whatever `model` is
  x$frame_terms %||% attr(x$model, "terms") %||% x$terms$full
}

#' @rdname gpgam-methods
#' @export
model.matrix.gpgam <- function(object, ...) predict(object, type = "lpmatrix", ...)

#' @rdname gpgam-methods
#' @param formula for `model.frame()`: a fit made by [gpgam()]. Its model frame
#'   (every variable of the formula, the `gp()` inputs included); after
#'   `model = FALSE`, rebuilt from the call's data, subset, weights and
#'   offset, evaluated in the formula's environment.
#' @export
model.frame.gpgam <- function(formula, ...) {
  no_dots("model.frame.gpgam", list(...), "the fit's own frame is returned; for other data use stats::model.frame(terms(fit), data)")
  if (!is.null(formula$model)) return(formula$model)
  gp_model_frame(formula$call, environment(formula$formula), terms(formula))
}

#' @rdname gpgam-methods
#' @export
nobs.scalegp <- function(object, ...) {
  # rows with a non-zero prior weight, as nobs.glm()
  if (is.numeric(object$prior.weights) && length(object$prior.weights) == object$n) sum(object$prior.weights != 0)
  else object$n
}

#' @rdname gpgam-methods
#' @export
fitted.scalegp <- function(object, ...) {
  check_kept_fitted(object)
  stats::napredict(object$na.action, object$fitted.values)
}

# A fit to data read in chunks (dgp(data = <function>)) keeps no fitted values.
check_kept_fitted <- function(object) {
  if (is.null(object$fitted.values))
    stop("this fit keeps no fitted values or residuals (it was fitted to data read in chunks); ",
         "predict(fit, newdata = <rows>) gives them for any rows", call. = FALSE)
}

#' @rdname gpgam-methods
#' @param x a fit made by [gpgam()].
#' @export
formula.scalegp <- function(x, ...) x$formula

#' @rdname gpgam-methods
#' @export
family.scalegp <- function(object, ...) glm_family(object$likelihood, object$params$theta)

#' Information criteria are not defined for scalegp fits
#'
#' `AIC()` and `BIC()` need a maximised log-likelihood and a number of
#' parameters.  A scalegp fit has neither: [logLik()] returns the objective
#' of its engine (the ELBO, a lower bound on the log marginal likelihood with
#' the functions integrated out, or the EP approximation of that marginal
#' likelihood), and its functions have no fixed number of parameters.  These
#' methods stop with a message saying so; compare fits of the same data by
#' their objectives with `anova(fit0, fit1)` (differences of log marginal
#' likelihoods are log Bayes factors; of ELBOs, approximations to them) or by
#' held-out predictive performance.
#'
#' @param object a fit made by [gpgam()].
#' @param ... further fits (ignored).
#' @param k unused.
#' @return Does not return: an error.
#' @examples
#' set.seed(1)
#' d <- data.frame(x = runif(100)); d$y <- sin(4 * d$x) + rnorm(100, sd = 0.2)
#' fit <- gpgam(y ~ gp(x), data = d, control = gp_control(inducing = 10))
#' try(AIC(fit))
#' @export
AIC.scalegp <- function(object, ..., k = 2) refuse_ic("AIC", ...length())

#' @rdname AIC.scalegp
#' @export
BIC.scalegp <- function(object, ...) refuse_ic("BIC", ...length())

refuse_ic <- function(what, others = 0) {
  stop(what, "() is not defined for scalegp fits: logLik() is the ELBO (a lower bound on the log marginal ",
       "likelihood) or the EP log evidence, not a maximised log-likelihood, and a GP has no fixed number of ",
       "parameters; ", if (others > 0) paste0("instead of ", what, "(fit1, fit2) use anova(fit1, fit2) ")
       else "compare fits with anova(fit0, fit1) ",
       "(differences of log marginal likelihoods) or by held-out predictions", call. = FALSE)
}

#' @rdname gpgam-methods
#' @details `deviance()` is the deviance of the posterior mean response
#'   (`sum(family(fit)$dev.resids(y, fitted(fit), w))`, as for a glm at its
#'   fitted values): a summary of fit, not the quantity a GP fit optimises.
#'   `df.residual()` is the number of rows with a non-zero prior weight
#'   (`nobs()`, as glm counts them) minus the total effective degrees of
#'   freedom (the edf of the `gp()` terms plus the parametric coefficients),
#'   as mgcv's (which counts rows of weight zero too).
#' @export
deviance.scalegp <- function(object, ...) deviance_explained(object)$deviance

#' @rdname gpgam-methods
#' @export
df.residual.scalegp <- function(object, ...) {
  nobs.scalegp(object) - sum(vapply(object$params$gp, `[[`, 1, "edf")) - length(param_kept(object$terms))
}
