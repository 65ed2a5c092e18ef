# summary() of a gpgam fit, for every engine: approximate tests of the gp()
# terms, hyperparameters, coefficients, deviance explained, convergence.

#' Summarise a gpgam fit
#'
#' In the manner of `mgcv::summary.gam()`:
#' * the parametric coefficients: posterior mean, sd, z = mean / sd and its
#'   normal p-value, or, when the fit estimates a dispersion (Gaussian
#'   noise, Gamma shape), t = mean / sd on the residual df (the rows less the
#'   total edf), as mgcv's;
#' * for every `gp()` term its effective degrees of freedom (edf,
#'   \eqn{tr(I - S_{cc})}{tr(I - S_cc)} of its whitened posterior; for
#'   `inference = "qsgp"` that of the exact GP, see [qsgp_options()]), a reference df, and an
#'   approximate test that the term is zero, in the spirit of Wood (2013): the
#'   statistic \eqn{\hat f' V_f^{r-} \hat f}{f' V^(r-) f}, with \eqn{\hat f}{f}
#'   the term's posterior mean at the data (centred), \eqn{V_f}{V} its posterior
#'   covariance there and \eqn{V_f^{r-}}{V^(r-)} the pseudo-inverse of rank
#'   r = `Ref.df`, the edf rounded (at least 1) (at most 5000 evenly spaced
#'   rows are used).  The p-value is that of the statistic's distribution over
#'   repeated data when the term is zero, at the fitted hyperparameters: a sum
#'   \eqn{\sum_i \lambda_i \chi^2_1}{sum lambda_i chi-squared(1)}, whose weights
#'   \eqn{\lambda_i < 1} come from the covariance of \eqn{\hat f}{f}, \eqn{S H S}
#'   with \eqn{S} the posterior covariance of the weights and \eqn{H} the
#'   likelihood's curvature (exact for a Gaussian response), computed by
#'   Imhof's (1961) integral or a saddlepoint approximation (Kuonen 1999).  A
#'   posterior mean is shrunk, so referring the statistic to
#'   \eqn{\chi^2_r}{chi-squared(r)} instead (as earlier versions did) is
#'   conservative: a term that is zero gets too few small p-values.  The
#'   hyperparameters are treated as known, so, as mgcv's p-values, these
#'   are somewhat too small for a term that is zero (most visibly near
#'   0.1).  For
#'   `inference = "decoupled"` and `"qsgp"`, whose posterior means do not come
#'   from such a Gaussian alone, the reference stays \eqn{\chi^2_r}{chi-squared(r)};
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
#'   coefficients' table, `p.coeff` their estimates and `p.pv` their
#'   p-values, `edf` and `s.pv` the terms' edf and p-values (columns of
#'   `s.table`), `residual.df` the residual degrees of freedom of the tests,
#'   `r.sq` and `dev.expl` the adjusted \eqn{R^2}{R^2} and the deviance
#'   explained.
#' @references Wood (2013) On p-values for smooth components of an extended
#'   generalized additive model. Biometrika 100, 221-228.
#'
#'   Imhof (1961) Computing the distribution of quadratic forms in normal
#'   variables. Biometrika 48, 419-426.
#'
#'   Kuonen (1999) Saddlepoint approximations for distributions of quadratic
#'   forms in normal variables. Biometrika 86, 929-935.
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
  coefs <- if (scale_estimated(object))
    cbind(Estimate = pp$coef, `Std. Error` = se, `t value` = z, `Pr(>|t|)` = 2 * stats::pt(-abs(z), residual_df(object)))
  else cbind(Estimate = pp$coef, `Std. Error` = se, `z value` = z, `Pr(>|z|)` = 2 * stats::pnorm(-abs(z)))
  tests <- term_tests(object)
  av <- if (!is.null(object$model)) variance_table(object, tests) else NULL
  terms <- do.call(rbind, lapply(object$params$gp, function(g) {
    data.frame(term = g$label, kernel = g$kernel, basis = g$basis, variance = g$variance,
               lengthscale = if (length(g$lengthscale)) paste(vapply(g$lengthscale, format, "", digits = 4), collapse = ", ")
                             else "-",
               share = if (is.null(av)) NA_real_ else av$share[match(g$label, av$term)],
               stringsAsFactors = FALSE)
  }))
  hs <- vapply(object$params$gp, function(g) identical(g$type, "hilbert"), TRUE)
  if (!is.null(terms)) names(terms)[3] <- if (all(hs)) "basis" else if (any(hs)) "basis size" else object$engine$basis_column
  warn <- c(not_converged(object), lik_bound_note(object),
            if (length(aliased))
              paste0("the parametric design is rank deficient: ", paste0("'", names(pp$coef)[aliased], "'", collapse = ", "),
                     " (aliased with earlier columns) set to 0"),
            engine_notes(object))
  fit_stats <- deviance_explained(object)
  structure(list(call = object$call, family = object$family$family, link = link_name(object), n = object$n,
                 engine = engine_label(object), terms = terms, s.table = tests,
                 coefficients = coefs, p.table = coefs, p.coeff = pp$coef, p.pv = stats::setNames(coefs[, 4], rownames(coefs)),
                 edf = if (!is.null(tests)) stats::setNames(tests[, "edf"], rownames(tests)),
                 s.pv = if (!is.null(tests)) stats::setNames(tests[, "p-value"], rownames(tests)),
                 residual.df = residual_df(object), sigma = if (object$likelihood == "gaussian") object$params$sigma else NA_real_,
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
# (term_projection()), the statistic f' V^{r-} f over V's r = round(edf)
# leading eigenvectors.  When the engine gives null_cov, the covariance C of
# f over repeated data when the term is zero, the statistic is distributed
# as sum_i lambda_i chi^2_1 under that null, lambda the eigenvalues of
# D^{-1/2} E' C E D^{-1/2} (E, D: V's leading r eigenvectors and values),
# and the p-value is that sum's (pchisq_sum()); else (or when every lambda
# is below 1e-6) chi-squared(r).  The
# posterior shrinks f, so lambda < 1 and chi-squared(r) would be
# conservative.
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
    E <- ev$vectors[, seq_len(r), drop = FALSE] %*% diag(1 / sqrt(ev$values[seq_len(r)]), r)
    stat <- sum(drop(crossprod(E, b))^2)
    C <- proj[[i]]$null_cov
    # (weights in [0, 1]; all below 1e-6: the data barely move the term, whose
    # weights are then rounding noise, and chi-squared(r) is the safe reference)
    lam <- if (!is.null(C)) pmin(eigen(crossprod(E, C %*% E), symmetric = TRUE, only.values = TRUE)$values, 1)
    p <- if (is.null(C) || max(lam) < 1e-6) stats::pchisq(stat, r, lower.tail = FALSE) else pchisq_sum(stat, lam)
    c(edf, r, stat, p)
  }, numeric(4)))
  dimnames(tab) <- list(gp_labels(object$terms),
                        c("edf", "Ref.df", "Chi.sq", "p-value"))
  tab
}

# P(sum_i lambda_i X_i > q), X_i independent chi-squared(1), lambda >= 0
# (weights below 1e-10 of the largest dropped): one weight, or all equal,
# pchisq(); else the saddlepoint approximation of Lugannani and Rice
# (Kuonen 1999, Biometrika 86, 929-935; within a few percent of the
# probability, tails included) where it is below 1e-6, and otherwise
# Imhof's (1961) integral by stats::integrate() (absolute error below 1e-6)
# unless that fails (a dominant weight makes its tail decay slowly) or is
# below 1e-5, when the saddlepoint stands.
pchisq_sum <- function(q, lambda) {
  lambda <- lambda[lambda > max(lambda, 0) * 1e-10]
  if (!length(lambda)) return(as.numeric(q < 0))
  if (q <= 0) return(1)
  if (max(lambda) - min(lambda) <= 1e-12 * max(lambda))
    return(stats::pchisq(q / max(lambda), length(lambda), lower.tail = FALSE))
  sp <- pchisq_sum_saddle(q, lambda)
  if (sp < 1e-6) return(sp)  # (far in the tail, where the integral is slow and no more accurate)
  integrand <- function(u) {
    theta <- 0.5 * colSums(atan(outer(lambda, u))) - 0.5 * q * u
    rho <- exp(0.25 * colSums(log1p(outer(lambda^2, u^2))))
    sin(theta) / (u * rho)
  }
  v <- tryCatch(stats::integrate(integrand, 0, Inf, subdivisions = 10000L, rel.tol = 1e-6, abs.tol = 1e-8)$value,
                error = function(e) NA_real_)
  p <- 0.5 + v / pi
  if (is.finite(p) && p >= 1e-5 && p <= 1) p else sp
}

# pchisq_sum()'s saddlepoint: the cumulant generating function
# K(s) = -1/2 sum log(1 - 2 s lambda), s < 1 / (2 max lambda), solved for
# K'(s) = q in t = 1 - 2 s max(lambda).
pchisq_sum_saddle <- function(q, lambda) {
  lmax <- max(lambda)
  K1 <- function(s) sum(lambda / (1 - 2 * s * lambda))
  t <- stats::uniroot(function(t) log(K1((1 - t) / (2 * lmax))) - log(q),
                      c(1e-300, 1 + 2 * lmax * length(lambda) / q), tol = 1e-12)$root
  s <- (1 - t) / (2 * lmax)
  w2 <- 2 * (s * q + 0.5 * sum(log1p(-2 * s * lambda)))
  if (abs(s) < 1e-6 || w2 <= 0)  # (at the mean: the formula's limit, 1/2 less the skewness over 6 sqrt(2 pi))
    return(0.5 - 8 * sum(lambda^3) / (6 * sqrt(2 * pi) * (2 * sum(lambda^2))^1.5))
  w <- sign(s) * sqrt(w2)
  u <- s * sqrt(2 * sum(lambda^2 / (1 - 2 * s * lambda)^2))
  min(1, max(0, stats::pnorm(w, lower.tail = FALSE) + stats::dnorm(w) * (1 / u - 1 / w)))
}

# Residual degrees of freedom of the tests and R^2: df.residual() (the rows
# of non-zero weight less the total edf), at least 1.
residual_df <- function(object) max(1, df.residual.scalegp(object))

# Whether the fit estimated a dispersion (the Gaussian noise unless held by
# gp_control(fixed = "sigma"), the Gamma shape unless the family gave it):
# then, as mgcv's, the parametric coefficients' tests are t tests (F for a
# term of several columns) on residual_df().
scale_estimated <- function(object) {
  switch(object$likelihood, gaussian = !"sigma" %in% object$control$fixed, gamma = !fixed_theta(object), FALSE)
}

# Deviance explained (against the intercept-only glm with the fit's weights
# and offset) and the adjusted R^2 on the response scale (as mgcv's, for
# every family) with residual df residual_df() (rows of weight zero left
# out, as from the n - 1 of the null model's).
deviance_explained <- function(object) {
  fam <- family(object)
  y <- object$y
  w <- object$prior.weights
  mu <- object$fitted.values
  dev <- sum(fam$dev.resids(y, mu, w))
  x0 <- matrix(1, length(y), as.integer(object$intercept))
  null <- suppressWarnings(stats::glm.fit(x0, y, weights = w, offset = object$offset, family = fam))$deviance
  df <- residual_df(object)
  r.sq <- 1 - sum(w * (y - mu)^2) / df / (sum(w * (y - stats::weighted.mean(y, w))^2) / (sum(w != 0) - 1))
  list(dev.expl = if (null > 0) (null - dev) / null else NA_real_, r.sq = r.sq, deviance = dev, null = null)
}
