# S3 methods shared by every engine (class "gpgam").

#' @export
print.gpgam <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("\nGaussian-process additive model (", engine_label(x), ")\n", sep = "")
  cat("Formula: ", deparse1(x$formula), "\n", sep = "")
  cat("Family: ", x$family$family, " (", link_name(x), "), n = ", x$n, "\n", sep = "")
  for (g in x$params$gp)
    cat(sprintf("%s: %s%s, %d inducing points, variance %s%s, edf %s\n", g$label, g$kernel,
                if (g$type == "factor") " random effect" else if (g$type == "centred") " kernel (centred)" else " kernel",
                g$n_inducing, format(g$variance, digits = digits),
                if (length(g$lengthscale)) paste0(", lengthscale ", paste(format(g$lengthscale, digits = digits),
                                                                           collapse = ", ")) else "",
                format(g$edf, digits = digits)))
  cf <- coef(x)
  if (length(cf)) {
    cat("Coefficients:\n")
    print(cf, digits = digits)
  }
  if (!is.na(x$params$sigma)) cat("sigma: ", format(x$params$sigma, digits = digits), "\n", sep = "")
  cat(objective_label(x), ": ", format(objective_value(x), digits = digits + 3),
      if (!x$converged) " (not converged)", "\n\n", sep = "")
  invisible(x)
}

engine_label <- function(x) {
  switch(x$engine, vi = "sparse variational GP",
         ep = paste0("expectation propagation, ",
                     if (!is.null(x$control$distributed)) paste0("distributed over ", x$control$distributed, " workers")
                     else if (x$control$batch_size < x$n)
                       paste0("minibatches", if (identical(x$control$sites, "tied")) ", tied sites")
                     else "batch"),
         x$engine)
}
# The objective a fit maximised: the ELBO (vi) or the EP log evidence (ep).
objective_value <- function(x) if (identical(x$engine, "ep")) x$evidence else x$elbo
objective_label <- function(x) if (identical(x$engine, "ep")) "EP log evidence" else "ELBO"
objective_note <- function(x) {
  if (identical(x$engine, "ep")) "the EP approximation of the log marginal likelihood"
  else "a lower bound on the log marginal likelihood"
}
link_name <- function(x) switch(x$likelihood, gaussian = "identity", probit = "probit",
                                logit = "logit", poisson = "log")

#' Summarise a gpgam fit
#'
#' Hyperparameters of every `gp()` term on the scale of the data, the
#' posterior of the parametric coefficients (mean, sd, and the z statistic
#' mean / sd with its normal p-value), the noise sd, the ELBO, the number of
#' iterations, whether the stopping rule was met, and the fitting time.
#'
#' @param object a `gpgam` fit.
#' @param x a `summary.gpgam` object.
#' @param digits number of significant digits.
#' @param ... unused.
#' @return An object of class `summary.gpgam`.
#' @examples
#' set.seed(3)
#' d <- data.frame(x = runif(200), z = rnorm(200))
#' d$y <- cos(4 * d$x) + d$z + rnorm(200, sd = 0.3)
#' summary(gpgam(y ~ gp(x) + z, data = d, control = gp_control(inducing = 15, iterations = 200)))
#' @export
summary.gpgam <- function(object, ...) {
  pp <- param_posterior(object)
  se <- sqrt(diag(pp$vcov))
  z <- pp$coef / se
  coefs <- cbind(Estimate = pp$coef, `Std. Error` = se, `z value` = z, `Pr(>|z|)` = 2 * stats::pnorm(-abs(z)))
  av <- if (!is.null(object$model)) variance_table(object) else NULL
  terms <- do.call(rbind, lapply(object$params$gp, function(g) {
    data.frame(term = g$label, kernel = g$kernel, inducing = g$n_inducing, variance = g$variance,
               lengthscale = if (length(g$lengthscale)) paste(format(g$lengthscale, digits = 4), collapse = ", ")
                             else "-",
               edf = g$edf, share = if (is.null(av)) NA_real_ else av$share[match(g$label, av$term)],
               stringsAsFactors = FALSE)
  }))
  warn <- character()
  if (!object$converged) warn <- c(warn, "the stopping rule was not met; increase 'iterations' or check plot(fit, which = \"trace\")")
  if (isTRUE(object$failures > 0))
    warn <- c(warn, sprintf("EP undid %d update(s) that failed or gave a non-finite evidence (damping and learning rate halved each time)",
                            object$failures))
  if (isTRUE(object$rank_loss > 0.01))
    warn <- c(warn, sprintf("the rank restriction (rank = %d) discards %.1f%% of the effective degrees of freedom; increase 'rank'",
                            object$control$rank, 100 * object$rank_loss))
  structure(list(call = object$call, family = object$family$family, link = link_name(object), n = object$n,
                 engine = engine_label(object), terms = terms, coefficients = coefs,
                 sigma = object$params$sigma, objective = objective_value(object),
                 objective_label = objective_label(object), objective_note = objective_note(object),
                 ylevels = object$ylevels, iterations = object$iterations,
                 converged = object$converged, time = object$timing[["fit"]],
                 batch_size = object$control$batch_size, threads = object$control$threads,
                 posterior = object$control$posterior, warnings = warn),
            class = "summary.gpgam")
}

#' @rdname summary.gpgam
#' @export
print.summary.gpgam <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("\nFamily:", x$family, "\nLink function:", x$link, "\n")
  if (length(x$ylevels) == 2)
    cat(sprintf("Modelled: P(y = \"%s\") (against \"%s\")\n", x$ylevels[2], x$ylevels[1]))
  cat("Inference:", x$engine, "\n\nCall:\n")
  print(x$call)
  if (!is.null(x$terms) && nrow(x$terms)) {
    cat("\nGaussian-process terms (", x$posterior, " posterior):\n", sep = "")
    h <- x$terms
    for (v in c("variance", "edf", "share")) h[[v]] <- format(h[[v]], digits = digits)
    print(h, row.names = FALSE, right = FALSE)
  }
  if (nrow(x$coefficients)) {
    cat("\nParametric coefficients (posterior mean and sd):\n")
    stats::printCoefmat(x$coefficients, digits = digits)
  }
  if (!is.na(x$sigma)) cat("\nResidual sd (sigma):", format(x$sigma, digits = digits), "\n")
  cat(sprintf("\n%s = %s (%s), n = %d\n", x$objective_label, format(x$objective, digits = digits + 3),
              x$objective_note, x$n))
  cat(sprintf("%d iterations (batch size %d, %d thread%s), %s, %.2f s\n\n", x$iterations, x$batch_size,
              x$threads, if (x$threads > 1) "s" else "",
              if (x$converged) "converged" else "NOT converged (stopping rule not met)", x$time))
  for (w in x$warnings) cat("Warning:", w, "\n")
  invisible(x)
}

#' Methods for gpgam fits
#'
#' `coef()` and `vcov()` give the posterior mean and covariance of the
#' parametric coefficients; `sigma()` the residual sd of a Gaussian model (1
#' otherwise); `logLik()` the ELBO, a lower bound on the log marginal
#' likelihood (`inference = "vi"`), or the EP estimate of the log marginal
#' likelihood (`inference = "ep"`), with `df` the number of estimated hyperparameters plus
#' parametric coefficients; `fitted()` the posterior mean response at the data;
#' `residuals()` response or Pearson residuals.
#'
#' @param object a `gpgam` fit.
#' @param type residual type.
#' @param ... unused.
#' @name gpgam-methods
#' @examples
#' set.seed(4)
#' d <- data.frame(x = runif(150), z = rnorm(150))
#' d$y <- sin(5 * d$x) + 2 * d$z + rnorm(150, sd = 0.2)
#' fit <- gpgam(y ~ gp(x) + z, data = d, control = gp_control(inducing = 10, iterations = 200))
#' coef(fit); sigma(fit); logLik(fit); nobs(fit)
#' head(fitted(fit)); head(residuals(fit))
NULL

#' @rdname gpgam-methods
#' @export
coef.gpgam <- function(object, ...) param_posterior(object)$coef

#' @rdname gpgam-methods
#' @export
vcov.gpgam <- function(object, ...) param_posterior(object)$vcov

#' @rdname gpgam-methods
#' @export
sigma.gpgam <- function(object, ...) if (is.na(object$params$sigma)) 1 else object$params$sigma

#' @rdname gpgam-methods
#' @export
logLik.gpgam <- function(object, ...) {
  df <- sum(vapply(object$params$gp, function(g) 1 + length(g$lengthscale), 1)) +
    length(coef(object)) + !is.na(object$params$sigma)
  structure(objective_value(object), df = df, nobs = object$n, class = "logLik")
}

#' @rdname gpgam-methods
#' @export
nobs.gpgam <- function(object, ...) object$n

#' @rdname gpgam-methods
#' @export
fitted.gpgam <- function(object, ...) {
  stats::napredict(object$na.action, object$fitted.values)
}

#' @rdname gpgam-methods
#' @export
residuals.gpgam <- function(object, type = c("response", "pearson"), ...) {
  type <- match.arg(type)
  mu <- object$fitted.values
  r <- object$y - mu
  if (type == "pearson") {
    v <- switch(object$likelihood, gaussian = sigma(object)^2 / object$prior.weights,
                poisson = mu, mu * (1 - mu) / object$prior.weights)
    r <- r / sqrt(v)
  }
  stats::naresid(object$na.action, r)
}

#' @rdname gpgam-methods
#' @param x a `gpgam` fit.
#' @export
formula.gpgam <- function(x, ...) x$formula

#' @rdname gpgam-methods
#' @export
family.gpgam <- function(object, ...) {
  switch(object$likelihood, gaussian = stats::gaussian(), probit = stats::binomial("probit"),
         logit = stats::binomial("logit"), poisson = stats::poisson())
}
