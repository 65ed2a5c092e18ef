# anova() of gpgam fits: the variance decomposition of one fit, the
# comparison of nested fits by their objectives.

#' Variance decomposition and model comparison for gpgam fits
#'
#' With one fit, a functional-ANOVA table: for every term (as
#' `predict(type = "terms")` labels and orders them: parametric terms, then
#' `gp()` terms, as mgcv's `anova.gam()`) the variance over the data of its
#' posterior mean contribution, its share of the sum of these variances (the
#' shares sum to 1; with centred components they estimate first-order and
#' interaction Sobol indices) and its effective degrees of freedom (for a
#' `gp()` term \eqn{tr(I - S_{cc})}{tr(I - S_cc)} in whitened coordinates; for a parametric
#' term its number of coefficients).  Computed on the stored model frame (at
#' most 100 000 evenly spaced rows).  Beside them, an approximate test that
#' the term is zero: for a `gp()` term the test of [summary.gpgam()]
#' (`Ref.df`, `Chi.sq`, `p-value`); for a parametric term the Wald statistic
#' \eqn{b^\top V^{-1} b}{b' V^-1 b} of its coefficients' posterior mean and
#' covariance on as many degrees of freedom as it has coefficients (for one
#' coefficient, the square of its z or t value), as mgcv's `anova.gam()` tests
#' parametric terms: referred to \eqn{\chi^2}{chi-squared} (column
#' `Chi.sq`), or, when the fit estimates a dispersion (Gaussian, Gamma), the
#' statistic over its df (column `F`, which only such fits have) to an F
#' distribution on the residual df of [summary.gpgam()].
#'
#' With several fits of the same data, their objectives ([logLik()]) side by
#' side: ELBOs (`inference = "vi"`; each a lower bound on its log marginal
#' likelihood) or EP log evidences (`inference = "ep"`); their differences
#' approximate log Bayes factors.  Parametric coefficients have a vague
#' prior (sd 100 on the scale of standardised columns), and a Bayes factor
#' charges each added coefficient for it (Lindley's paradox): when the fits
#' differ in parametric terms the table says so, and the Wald test of the
#' larger fit's `anova()` is the better guide (a factor entered as `gp(f)`
#' has its prior scale estimated instead).  The ELBOs of `inference =
#' "qsgp"` fits are biased by amounts that differ between models
#' ([qsgp_options()]), so comparing them warns.
#'
#' @param object a `gpgam` fit.
#' @param ... further fits to compare.
#' @return A data frame of class `c("gpgam_anova", "data.frame")`: columns
#'   `term`, `variance`, `share`, `edf`, `Ref.df`, `Chi.sq` (`F` beside it
#'   when a dispersion is estimated and there are parametric terms),
#'   `p-value` for one fit; `ELBO` (or
#'   `EP log evidence`, or `logLik` for a mix of engines), `df` and its
#'   difference from the previous row (one row per fit) for several.
#' @examples
#' set.seed(6)
#' d <- data.frame(x1 = runif(400), x2 = runif(400))
#' d$y <- sin(6 * d$x1) + 0.3 * d$x2 + rnorm(400, sd = 0.2)
#' ctl <- gp_control(inducing = 15, iterations = 300)
#' f1 <- gpgam(y ~ gp(x1) + gp(x2), data = d, control = ctl)
#' anova(f1)
#' f0 <- gpgam(y ~ gp(x1), data = d, control = ctl)
#' anova(f0, f1)
#' @export
anova.gpgam <- function(object, ...) {
  others <- drop_test_arg(list(...), "gpgam fits",
                          paste0("with one fit it decomposes the variance of the posterior mean and tests each ",
                                 "term as summary() does; with several it compares their objectives, whose ",
                                 "differences approximate log Bayes factors (no test)"))
  if (length(others) == 0) {
    tab <- variance_table(object)
    # parametric terms first, then the gp() terms, as mgcv's anova.gam() and predict(type = "terms")
    gp <- seq_len(nrow(tab)) <= length(object$terms$gp)
    tab <- tab[match(mgcv_term_order(tab$term, gp), tab$term), , drop = FALSE]
    rownames(tab) <- NULL
    return(structure(tab, heading = c("Variance decomposition (functional ANOVA) of the posterior mean,",
                                      "with approximate tests that each term is zero (those of summary() for gp() terms)"),
                     class = c("gpgam_anova", "data.frame")))
  }
  compare_fits(c(list(object), others), anova_labels(match.call()), "gpgam")
}

# `others` (anova()'s arguments after the first) without a `test` argument,
# which anova() of `what` does not take: a warning says what it does
# (`does`) instead.
drop_test_arg <- function(others, what, does) {
  if (!"test" %in% names(others)) return(others)
  warning("anova() of ", what, " has no 'test' argument (it is ignored): ", does, call. = FALSE)
  others[names(others) != "test"]
}

# The fits of an anova() call as typed (without its `test` argument).
anova_labels <- function(call) {
  args <- as.list(call)[-1]
  vapply(args[(names(args) %||% rep("", length(args))) != "test"], deparse1, "")
}

# anova() of several fits of one class (`cls`: "gpgam", or "gpgam_ls" for
# location-scale fits) of the same data: their objectives (logLik()) side
# by side, labelled by `labels` (the arguments as typed).
compare_fits <- function(fits, labels, cls) {
  object <- fits[[1]]
  if (!all(vapply(fits, inherits, TRUE, cls))) {
    if (any(vapply(fits, inherits, TRUE, "gpgam_ls")) && any(vapply(fits, inherits, TRUE, "gpgam")))
      stop_arg("...", "mixes fits of one predictor with location-scale (gaulss) fits; anova() compares fits of ",
               "one kind (compare the two kinds by held-out predictions)")
    stop_arg("...", "must all be ", if (cls == "gpgam") "gpgam fits" else "location-scale (gaulss) fits",
             " to compare with the first")
  }
  n <- vapply(fits, nobs, 1)
  if (length(unique(n)) > 1) stop_arg("...", "fits use different numbers of observations (", paste(n, collapse = ", "), ")")
  if (!all(vapply(fits[-1], function(f) identical(f$y, object$y), TRUE)))
    stop_arg("...", "fits are of different responses (or rows): their objectives cannot be compared")
  fam <- vapply(fits, function(f) f$likelihood, "")
  if (length(unique(fam)) > 1)
    stop_arg("...", "fits have different families or links (", paste(unique(fam), collapse = ", "),
             "): compare them by held-out predictions")
  obj <- vapply(fits, function(f) f$engine$objective, "")
  if (length(unique(obj)) > 1)
    warning("the fits maximise different objectives (", paste(unique(obj), collapse = ", "), "): their ",
            "difference is not a log Bayes factor; compare fits of one inference engine, or by held-out ",
            "predictions", call. = FALSE)
  for (w in unique(unlist(lapply(fits, function(f) f$engine$compare_warning)))) warning(w, call. = FALSE)
  ll <- lapply(fits, logLik)
  elbo <- vapply(ll, as.numeric, 1)
  df <- vapply(ll, attr, 1, "df")
  names <- make.unique(labels[seq_along(fits)])
  objectives <- unique(obj)
  lab <- if (length(objectives) == 1) objectives else "logLik"
  tab <- data.frame(elbo, df, c(NA, diff(elbo)), row.names = names)
  names(tab) <- c(lab, "df", paste("Delta", lab))
  # fits with different parametric coefficients: their vague prior enters the difference
  pnames <- lapply(fits, function(f) sort(names(coef(f))))
  lindley <- length(unique(pnames)) > 1
  structure(tab, heading = c(paste0("Comparison of gpgam fits by ", lab,
                                    if (length(objectives) == 1) paste0(" (", object$engine$objective_note, ")")),
                             paste0("Differences of log marginal likelihoods are log Bayes factors; of ",
                                    "ELBOs, approximations to them (each is a lower bound). No test is made; ",
                                    "df counts the estimated hyperparameters and coefficients."),
                             if (lindley)
                               paste0("Note: the fits differ in parametric coefficients, whose prior is vague ",
                                      "(N(0, 100^2) on the standardised scale). A Bayes factor charges each added ",
                                      "coefficient for that prior, so a difference here understates a parametric ",
                                      "term's evidence: test it by anova() of the larger fit (a Wald test), or enter ",
                                      "a factor as gp(f), whose prior scale is estimated."),
                             paste0("Model ", seq_along(fits), ": ", vapply(fits, function(f) deparse1(f$formula), ""))),
            class = c("gpgam_anova", "data.frame"))
}

#' @export
print.gpgam_anova <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  width <- getOption("width", 80L)
  for (h in attr(x, "heading")) cat(strwrap(h, width = width, exdent = 2L), sep = "\n")
  cat("\n")
  out <- x
  if (is.null(x$term)) {  # fits compared: objectives and differences to 2 decimals (whatever their size);
    # the first row has no difference (blank, as anova.gam())
    out <- data.frame(formatC(x[[1]], format = "f", digits = 2), format(x[[2]]),
                      ifelse(is.na(x[[3]]), "", formatC(x[[3]], format = "f", digits = 2)),
                      row.names = row.names(x), check.names = FALSE, stringsAsFactors = FALSE)
    names(out) <- names(x)
  } else if (!nrow(x)) {  # one fit without terms
    cat("No terms besides the intercept.\n")
    return(invisible(x))
  } else {  # one fit: each column formatted on its own, p-values as format.pval() writes them
    out <- data.frame(term = x$term, variance = formatC(x$variance, format = "g", digits = digits),
                      share = formatC(x$share, format = "f", digits = 4), edf = formatC(x$edf, format = "f", digits = 3),
                      check.names = FALSE, stringsAsFactors = FALSE)
    if (!is.null(x[["p-value"]])) {
      out$Ref.df <- ifelse(is.na(x$Ref.df), "", format(x$Ref.df))
      out$Chi.sq <- ifelse(is.na(x$Chi.sq), "", formatC(x$Chi.sq, format = "f", digits = 2))
      if (!is.null(x$F)) out$F <- ifelse(is.na(x$F), "", formatC(x$F, format = "f", digits = 2))
      out[["p-value"]] <- ifelse(is.na(x[["p-value"]]), "", format.pval(x[["p-value"]], digits = digits, eps = 2e-16))
    }
  }
  print.data.frame(out, digits = digits, row.names = is.null(x$term), right = TRUE, ...)
  invisible(x)
}

# term, variance, share, edf for one fit.
variance_table <- function(object, gp_tests = term_tests(object)) {
  if (is.null(object$model)) stop_arg("object", "was fitted with model = FALSE; anova() needs the model frame")
  mf <- object$model
  if (nrow(mf) > 1e5) mf <- mf[unique(round(seq(1, nrow(mf), length.out = 1e5))), , drop = FALSE]
  tt <- terms_at_frame(object, mf)
  v <- if (ncol(tt)) apply(tt, 2, stats::var, na.rm = TRUE) else numeric(0)  # (no term but the intercept)
  edf_gp <- vapply(object$params$gp, `[[`, 1, "edf")
  asg <- object$terms$param_assign
  kept <- asg[param_kept(object$terms)]
  edf <- c(edf_gp, as.numeric(table(factor(kept[kept > 0], levels = seq_len(ncol(tt) - length(edf_gp))))))
  tab <- data.frame(term = as.character(colnames(tt)), variance = as.numeric(v), share = as.numeric(v / sum(v)),
                    edf = as.numeric(edf),
                    stringsAsFactors = FALSE)
  cbind(tab, term_test_columns(object, colnames(tt), gp_tests))
}

# The approximate tests that each term is zero, in the order of `labels`
# (gp() terms, then parametric terms): those of summary() for gp() terms
# (term_tests()), Wald tests b' V^-1 b of the posterior mean and covariance
# of a parametric term's coefficients on as many df as it has columns (as
# mgcv's anova.gam() tests them: chi-squared (column Chi.sq), or with an
# estimated dispersion (scale_estimated()) F = b' V^-1 b / df on
# residual_df() (column F, which only such fits with parametric terms have;
# their parametric rows leave Chi.sq empty)).
term_test_columns <- function(object, labels, gp) {
  na <- rep(NA_real_, length(labels))  # (no term but the intercept: zero rows)
  out <- data.frame(ref.df = na, chi.sq = na, f = na, p.value = na)
  if (!is.null(gp)) {
    i <- match(rownames(gp), labels)
    out[i[!is.na(i)], c(1, 2, 4)] <- gp[!is.na(i), c("Ref.df", "Chi.sq", "p-value")]
  }
  pp <- param_posterior(object)
  est <- scale_estimated(object)
  rdf <- residual_df(object)
  asg <- object$terms$param_assign
  lab <- if (!is.null(object$terms$param)) attr(object$terms$param, "term.labels")
  for (j in setdiff(unique(asg), 0)) {
    k <- match(lab[j], labels)
    if (is.na(k)) next
    idx <- intersect(which(asg == j), param_kept(object$terms))  # (aliased columns are 0, not tested)
    if (!length(idx)) next
    b <- pp$coef[idx]
    V <- pp$vcov[idx, idx, drop = FALSE]
    stat <- tryCatch(sum(b * solve(V, b)), error = function(e) NA_real_)
    out[k, ] <- if (est) c(length(idx), NA, stat / length(idx), stats::pf(stat / length(idx), length(idx), rdf, lower.tail = FALSE))
                else c(length(idx), stat, NA, stats::pchisq(stat, length(idx), lower.tail = FALSE))
  }
  names(out) <- c("Ref.df", "Chi.sq", "F", "p-value")
  if (!est || all(is.na(out$F))) out$F <- NULL
  out
}
