# summary() of a gpgam fit, for every engine.

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
  warn <- c(if (!object$converged)
              paste0("the fit did not converge (", object$stop %||% "stopping rule not met",
                     "); see gp_check(fit) and plot(fit, which = \"trace\")"),
            engine_notes(object))
  structure(list(call = object$call, family = object$family$family, link = link_name(object), n = object$n,
                 engine = engine_label(object), terms = terms, coefficients = coefs,
                 sigma = object$params$sigma, objective = object$objective,
                 objective_label = object$engine$objective, objective_note = object$engine$objective_note,
                 ylevels = object$ylevels, iterations = object$iterations,
                 converged = object$converged, convergence = convergence_line(object),
                 q_change = object$q_change, time = object$timing[["fit"]],
                 batch_size = object$control$batch_size, threads = object$control$threads, warnings = warn),
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
    cat("\nGaussian-process terms:\n")
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
  cat(sprintf("%d iterations (batch size %d, %d thread%s), %.2f s\n", x$iterations, x$batch_size,
              x$threads, if (x$threads > 1) "s" else "", x$time))
  cat(x$convergence, "\n", sep = "")
  if (!is.null(x$q_change)) cat("Last change of the posterior mean of the inducing variables:",
                                format(x$q_change, digits = 2), "\n")
  cat("\n")
  for (w in x$warnings) cat("Warning:", w, "\n")
  invisible(x)
}

