# summary() of a gpgam fit, for every engine: approximate tests of the gp()
# terms, hyperparameters, coefficients, deviance explained, convergence.

#' Summarise a gpgam fit
#'
#' In the manner of `mgcv::summary.gam()`:
#' * the parametric coefficients: posterior mean, sd, z = mean / sd and its
#'   normal p-value;
#' * for every `gp()` term its effective degrees of freedom (edf,
#'   \eqn{tr(I - S_{cc})}{tr(I - S_cc)} of its whitened posterior; for
#'   `inference = "qsgp"` that of the exact GP, see [qsgp_options()]), a reference df, and an
#'   approximate test that the term is zero, in the spirit of Wood (2013): the
#'   statistic \eqn{\hat f' V_f^{r-} \hat f}{f' V^(r-) f}, with \eqn{\hat f}{f}
#'   the term's posterior mean at the data (centred), \eqn{V_f}{V} its posterior
#'   covariance there and \eqn{V_f^{r-}}{V^(r-)} the pseudo-inverse of rank
#'   r = `Ref.df`, the edf rounded (at least 1), referred to a
#'   \eqn{\chi^2_r}{chi-squared(r)} distribution (at most 5000 evenly spaced rows are used);
#' * the hyperparameters of each term on the scale of the data and its share
#'   of the variance of the posterior mean (see [anova.gpgam()]);
#' * the noise sd (Gaussian), the shape (Gamma) or theta (negative binomial),
#'   the deviance explained (against the intercept-only glm)
#'   and the adjusted \eqn{R^2}{R^2} of the fitted mean response (for every
#'   family, as mgcv's) with residual df n minus the total edf;
#' * the objective (the ELBO or the EP log evidence), the log prior of the
#'   hyperparameters, the iterations, how the fit ended (converged: a
#'   stationary point) and the time.
#'
#' @param object a `gpgam` fit.
#' @param x a `summary.gpgam` object.
#' @param digits number of significant digits.
#' @param ... unused.
#' @return An object of class `summary.gpgam`, with mgcv's names where they
#'   mean the same: `s.table` holds the term tests (columns `edf`, `Ref.df`,
#'   `Chi.sq`, `p-value`), `p.table` (also `coefficients`) the parametric
#'   coefficients' table, `p.coeff` their estimates, `r.sq` and `dev.expl`
#'   the adjusted \eqn{R^2}{R^2} and the deviance explained.
#' @references Wood (2013) On p-values for smooth components of an extended
#'   generalized additive model. Biometrika 100, 221-228.
#' @examples
#' set.seed(3)
#' d <- data.frame(x = runif(200), w = runif(200), z = rnorm(200))
#' d$y <- cos(4 * d$x) + d$z + rnorm(200, sd = 0.3)
#' summary(gpgam(y ~ gp(x) + gp(w) + z, data = d, control = gp_control(inducing = 15)))
#' @export
summary.gpgam <- function(object, ...) {
  pp <- param_posterior(object)
  se <- sqrt(diag(pp$vcov))
  z <- pp$coef / se
  aliased <- setdiff(seq_along(pp$coef), param_kept(object$terms))  # set to 0, variance 0: no test
  z[aliased] <- NA
  coefs <- cbind(Estimate = pp$coef, `Std. Error` = se, `z value` = z, `Pr(>|z|)` = 2 * stats::pnorm(-abs(z)))
  av <- if (!is.null(object$model)) variance_table(object) else NULL
  terms <- do.call(rbind, lapply(object$params$gp, function(g) {
    data.frame(term = g$label, kernel = g$kernel, basis = g$basis, variance = g$variance,
               lengthscale = if (length(g$lengthscale)) paste(vapply(g$lengthscale, format, "", digits = 4), collapse = ", ")
                             else "-",
               share = if (is.null(av)) NA_real_ else av$share[match(g$label, av$term)],
               stringsAsFactors = FALSE)
  }))
  hs <- vapply(object$params$gp, function(g) identical(g$type, "hilbert"), TRUE)
  if (!is.null(terms)) names(terms)[3] <- if (all(hs)) "basis" else if (any(hs)) "basis size" else object$engine$basis_column
  warn <- c(not_converged(object),
            if (length(aliased))
              paste0("the parametric design is rank deficient: ", paste0("'", names(pp$coef)[aliased], "'", collapse = ", "),
                     " (aliased with earlier columns) set to 0"),
            engine_notes(object))
  fit_stats <- deviance_explained(object)
  structure(list(call = object$call, family = object$family$family, link = link_name(object), n = object$n,
                 engine = engine_label(object), terms = terms, s.table = term_tests(object),
                 coefficients = coefs, p.table = coefs, p.coeff = pp$coef, sigma = if (object$likelihood == "gaussian") object$params$sigma else NA_real_,
                 lik_params = object$params[intersect(c("shape", "theta", "theta_fixed", "df",
                                                        if (object$likelihood == "scat") "sigma"),
                                                      names(object$params))],
                 objective = object$objective,
                 log_prior = object$log_prior, objective_label = object$engine$objective,
                 objective_note = object$engine$objective_note, dev.expl = fit_stats$dev.expl,
                 r.sq = fit_stats$r.sq, ylevels = object$ylevels, iterations = object$iterations,
                 converged = object$converged, convergence = convergence_line(object),
                 q_change = object$q_change, time = object$timing[["fit"]],
                 batch_size = object$control$batch_size, threads = object$control$threads, pilot = object$pilot,
                 warnings = warn),
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
  print_term_tables(x, digits)
  if (!is.na(x$sigma)) cat("\nResidual sd (sigma):", format(x$sigma, digits = digits), "\n")
  if (length(x$lik_params)) cat("\n", lik_param_line(list(params = x$lik_params), digits), sep = "")
  cat("\n", if (!is.null(x$r.sq)) paste0("R-sq.(adj) = ", format(x$r.sq, digits = 3), "   "),
      "Deviance explained = ", format(100 * x$dev.expl, digits = 3), "%\n", sep = "")
  cat(sprintf("%s = %s (%s), n = %d\n", x$objective_label, format(x$objective, digits = digits + 3),
              x$objective_note, x$n))
  if (isTRUE(x$log_prior != 0))
    cat("Log prior of the hyperparameters:", format(x$log_prior, digits = digits + 1), "\n")
  pilot <- if (!is.null(x$pilot))  # (a fit that started from a pilot fit: decoupled, qsgp)
    sprintf("a pilot fit of %d rows (%d iterations%s, %.2f s)", x$pilot$rows, x$pilot$iterations,
            if (isFALSE(x$pilot$converged)) ", not converged" else "", x$pilot$seconds)
  if (!is.null(pilot) && identical(as.integer(x$iterations), 0L))  # (decoupled: in closed form after it)
    cat(sprintf("No iterations: the posterior in closed form after %s; %d thread%s, %.2f s\n",
                pilot, x$threads, if (x$threads > 1) "s" else "", x$time))
  else
    cat(sprintf("%d iterations (batch size %d, %d thread%s)%s, %.2f s\n", x$iterations, x$batch_size,
                x$threads, if (x$threads > 1) "s" else "", if (!is.null(pilot)) paste(" after", pilot) else "", x$time))
  cat(x$convergence, "\n", sep = "")
  if (!is.null(x$q_change)) cat("Last change of the posterior mean of the weights:",
                                format(x$q_change, digits = 2), "\n")
  cat("\n")
  for (w in x$warnings) cat("Warning:", w, "\n")
  invisible(x)
}

# The parametric coefficients, the term tests and the hyperparameters of a
# summary (also one predictor's of a location-scale summary, R/gaulss.R).
print_term_tables <- function(x, digits, scale = "data scale") {
  if (nrow(x$coefficients)) {
    cat("\nParametric coefficients (posterior mean and sd):\n")
    stats::printCoefmat(x$coefficients, digits = digits)
  }
  if (!is.null(x$s.table) && nrow(x$s.table)) {
    cat("\nApproximate significance of gp() terms:\n")
    stats::printCoefmat(x$s.table, digits = digits, has.Pvalue = TRUE, na.print = "",
                        cs.ind = integer(), tst.ind = 3L)
  }
  if (!is.null(x$terms) && nrow(x$terms)) {
    cat("\nGaussian-process hyperparameters (", scale, "):\n", sep = "")
    h <- x$terms
    # each value in its own format (one tiny value puts no column in
    # scientific notation); the share of the variance, a proportion, to 3 places
    h$variance <- vapply(h$variance, format, "", digits = digits)
    h$share <- ifelse(is.na(h$share), "-", sprintf("%.3f", h$share))
    print(h, row.names = FALSE, right = FALSE)
  }
}

# Rows of the stored model frame used by the term tests and gp_check():
# all, or `max_rows` evenly spaced ones.
evaluation_rows <- function(object, max_rows = 5000) {
  n <- nrow(object$model)
  if (n <= max_rows) seq_len(n) else unique(round(seq(1, n, length.out = max_rows)))
}

# Approximate tests that each gp() term is zero (see ?summary.gpgam): with
# f the term's posterior mean at the data (centred) and V its covariance
# there, both projected on an orthonormal basis of their span by the engine
# (term_projection()), f' V^{r-} f.
term_tests <- function(object) {
  if (is.null(object$model) || length(object$terms$gp) == 0) return(NULL)
  rows <- evaluation_rows(object)
  nd <- new_design(object, NULL, stats::na.pass, mf = object$model[rows, , drop = FALSE])
  proj <- term_projection(object, nd$X[nd$ok, , drop = FALSE])
  tab <- t(vapply(seq_along(object$terms$gp), function(i) {
    b <- proj[[i]]$mean
    V <- proj[[i]]$cov
    ev <- eigen((V + t(V)) / 2, symmetric = TRUE)
    rank <- sum(ev$values > max(ev$values, 0) * 1e-10)
    edf <- object$params$gp[[i]]$edf
    r <- max(1L, min(as.integer(round(edf)), rank))
    if (rank == 0) return(c(edf, r, 0, 1))
    stat <- sum(drop(crossprod(ev$vectors[, seq_len(r), drop = FALSE], b))^2 / ev$values[seq_len(r)])
    c(edf, r, stat, stats::pchisq(stat, r, lower.tail = FALSE))
  }, numeric(4)))
  dimnames(tab) <- list(gp_labels(object$terms),
                        c("edf", "Ref.df", "Chi.sq", "p-value"))
  tab
}

# Deviance explained (against the intercept-only glm with the fit's weights
# and offset) and the adjusted R^2 on the response scale (as mgcv's, for
# every family) with residual df n minus the total edf (gp() terms and
# coefficients).
deviance_explained <- function(object) {
  fam <- family(object)
  y <- object$y
  w <- object$prior.weights
  mu <- object$fitted.values
  dev <- sum(fam$dev.resids(y, mu, w))
  x0 <- matrix(1, length(y), as.integer(object$intercept))
  null <- suppressWarnings(stats::glm.fit(x0, y, weights = w, offset = object$offset, family = fam))$deviance
  edf <- sum(vapply(object$params$gp, `[[`, 1, "edf")) + length(param_kept(object$terms))
  df <- max(1, length(y) - edf)
  r.sq <- 1 - sum(w * (y - mu)^2) / df / (sum(w * (y - stats::weighted.mean(y, w))^2) / (length(y) - 1))
  list(dev.expl = if (null > 0) (null - dev) / null else NA_real_, r.sq = r.sq, deviance = dev, null = null)
}
