# predict() of a gpgam fit: the new design, the latent predictor through
# latent_predict(), responses and per-term columns.

#' Predictions from a gpgam fit
#'
#' Follows [predict.lm()] and `mgcv::predict.gam()`.
#'
#' @param object a `gpgam` fit.
#' @param newdata a data frame with the variables of the formula; when
#'   missing, predictions at the data used for fitting.
#' @param type `"link"` (the latent predictor), `"response"` (the posterior
#'   mean of the mean response: for binomial the probability integrated over
#'   the posterior of the predictor, for the log links (poisson, Gamma,
#'   negative binomial) `exp(eta + se^2/2)`) or
#'   `"terms"` (a matrix with one column per term, as mgcv's: the parametric
#'   terms first, as their contributions `x beta`, then the `gp()` terms;
#'   `attr(, "constant")` is the intercept, so that
#'   `rowSums(terms) + constant + offset` equals the `"link"` prediction) or
#'   `"iterms"` (as `"terms"`, with the posterior variance of the intercept
#'   added to the standard errors of the `gp()` terms, as mgcv's `"iterms"`
#'   and `plot(seWithMean = TRUE)`) or
#'   `"lpmatrix"` (as mgcv's: the matrix `Xp` that maps the weights of the
#'   model to the linear predictor at `newdata`; see Details.  Unlike mgcv's
#'   `coef()`, `coef(fit)` gives the parametric coefficients only: the
#'   linear predictor is `Xp %*% coef(fit, full = TRUE)`).
#' @param se.fit also return standard errors: the posterior sd of the latent
#'   predictor (`"link"`, `"terms"`) or of the mean response (`"response"`).
#'   Observation noise is excluded; [sigma()] gives its sd for Gaussian models
#'   (`residual.scale`, as mgcv's, is `sigma()`: for Gamma `sqrt(1 / shape)`).
#'   Not with `type = "lpmatrix"` (see Details for the standard errors).
#' @param na.action what to do with rows of `newdata` with missing values:
#'   [na.pass()] (default) returns `NA` for them.  Without `newdata` the
#'   predictions (every `type`) are for the rows the fit used, padded with
#'   `NA` for the rows it dropped when it was made with
#'   `na.action = na.exclude` (as [predict.lm()] and mgcv's predict.gam()).
#' @param terms with `type = "terms"`, the labels of the terms to return (as
#'   in [predict.lm()]; mgcv's labels of an `s()` or `te()` term, such as
#'   `"s(x0)"` or `"te(x1,x2)"`, name its `gp()` term); `NULL`: all.  Ignored by `type = "link"` and
#'   `"response"` (as by [predict.lm()]: the prediction has every term);
#'   refused with `type = "lpmatrix"` (select the matrix's columns by name).
#' @param exclude labels of terms (as `type = "terms"` names them) to leave
#'   out, as mgcv's `exclude`: `"link"` and `"response"` predict without
#'   them (their posterior means subtracted, the standard errors those of the
#'   remaining terms jointly, from the weights' posterior: not available for
#'   `inference = "qsgp"`), `"terms"` drops their columns and
#'   `"lpmatrix"` sets their columns to 0 (and their part of
#'   `"nonbasis.var"`).  E.g. `exclude = "gp(subject)"` predicts at the
#'   random effect's mean.  `NULL` (default): none.
#' @param interval with `type = "link"` or `"response"`, as in
#'   [predict.lm()]: `"none"` (default), `"confidence"` or `"prediction"`;
#'   the result is then a matrix with columns `fit`, `lwr`, `upr`.
#'   `"confidence"` is the equal-tailed posterior interval of the linear
#'   predictor, `eta +/- z se`, and with `type = "response"` its image under
#'   the inverse link: the quantiles of the posterior of the mean response
#'   (`fit` stays the posterior mean, so for a log or logit link it need not
#'   be the interval's centre).  `"prediction"` is the interval of a new
#'   observation of weight 1, the quantiles of the posterior predictive
#'   distribution: for a Gaussian model `fit +/- z sqrt(se.fit^2 + sigma^2)`;
#'   for the scaled t, Gamma, Poisson and negative binomial computed by
#'   quadrature over the predictor's posterior (for counts, the quantiles are
#'   counts, so the interval covers at least `level`); on the response scale
#'   (with `type = "link"` only for the identity link); not for binomial
#'   models, whose new responses are 0 or 1.
#' @param level the probability of the interval.
#' @param ... unused.
#' @details With `type = "lpmatrix"` the result is the matrix `Xp` with a row
#'   per row of `newdata` and a column per weight of the model, named as
#'   mgcv names them: the parametric model matrix (`"(Intercept)"`, `"z"`,
#'   factor contrasts ...), then per `gp()` term the whitened features of its
#'   inducing variables (`"gp(x).1"`, ..., `"gp(x).M"`; a factor random
#'   effect has one per level), centred over the data as the term is in
#'   `type = "terms"` (the intercept carries the means).  The weights are
#'   `coef(fit, full = TRUE)`, with posterior covariance
#'   `vcov(fit, full = TRUE)`, on the data scale (a Gaussian response's
#'   scaling undone), so that
#'   \itemize{
#'   \item `Xp %*% coef(fit, full = TRUE) + attr(Xp, "model.offset")` is the
#'   `"link"` prediction (the offset, as in mgcv, is not in `Xp`);
#'   \item `rowSums((Xp %*% vcov(fit, full = TRUE)) * Xp) + attr(Xp,
#'   "nonbasis.var")` is the `"link"` `se.fit^2`.
#'   }
#'   Unlike a spline basis, a sparse GP's inducing points do not carry all of
#'   its posterior: at each row the prior variance they leave,
#'   \eqn{k(x, x) - \phi(x)'\phi(x)}{k(x, x) - phi(x)'phi(x)} (data scale),
#'   adds to the variance of the predictor independently of the weights.
#'   `attr(Xp, "nonbasis.var")` gives it per row; it is small where the
#'   inducing points are dense relative to the lengthscale and grows away
#'   from them and with fewer inducing points (it can be a large part of
#'   `se.fit^2` for a term over two or more inputs with few inducing
#'   points).  Contrasts and simulations built from `Xp`
#'   and the weights'
#'   posterior (mgcv's recipe) therefore omit it; add independent normal
#'   noise of that variance per row to match [simulate()]'s latent draws.
#'   With `inference = "decoupled"` the part of the mean from the further
#'   mean bases is one more column, `"gp(...).mean"`, whose weight is fixed
#'   at 1 with variance 0.  `inference = "qsgp"` has no lpmatrix (an error).
#'   Rows of `newdata` with missing values are rows of `NA`.
#'
#'   A level of a factor not seen in the fit is an error, except for the
#'   factor of a random effect `gp(f)` that enters the model nowhere else:
#'   there (with a warning) the effect of the new level is its prior, mean 0
#'   and the estimated variance, as for a new subject.  Its `"terms"` value
#'   there is the centring alone (0 minus the term's mean over the data),
#'   with the variance in its standard error; its lpmatrix columns are the
#'   centring alone and the variance is in `"nonbasis.var"`; `exclude` leaves
#'   it out.
#' @return A vector (or, for `"terms"`, a matrix) of predictions; with
#'   `se.fit = TRUE` a list with components `fit`, `se.fit` and
#'   `residual.scale`.  For `"lpmatrix"`, the matrix `Xp` with attributes
#'   `model.offset` and `nonbasis.var` (see Details).
#' @examples
#' set.seed(2)
#' d <- data.frame(x = runif(200))
#' d$y <- rbinom(200, 1, pnorm(3 * sin(6 * d$x)))
#' fit <- gpgam(y ~ gp(x), data = d, family = binomial(link = "probit"),
#'              control = gp_control(inducing = 15, iterations = 300))
#' predict(fit, data.frame(x = c(0.1, 0.5, 0.9)), type = "response", se.fit = TRUE)
#'
#' # the lpmatrix: a contrast between x = 0.2 and x = 0.8 with its posterior sd
#' Xp <- predict(fit, data.frame(x = c(0.2, 0.8)), type = "lpmatrix")
#' a <- Xp[2, ] - Xp[1, ]
#' c(estimate = sum(a * coef(fit, full = TRUE)),
#'   sd = sqrt(drop(a %*% vcov(fit, full = TRUE) %*% a)))
#' @export
predict.gpgam <- function(object, newdata, type = c("link", "response", "terms", "iterms", "lpmatrix"),
                          se.fit = FALSE, na.action = stats::na.pass, terms = NULL, exclude = NULL,
                          interval = c("none", "confidence", "prediction"), level = 0.95, ...) {
  type <- match_arg(type)
  iterms <- type == "iterms"
  if (iterms) type <- "terms"
  interval <- match_arg(interval)
  exclude <- check_exclude(object, exclude)
  if (interval != "none") {
    why <- interval_refusal(object, type, interval)
    if (!is.null(why)) stop_arg("interval", why)
    if (!is.numeric(level) || length(level) != 1 || !(level > 0 && level < 1))
      stop_arg("level", "must be a probability in (0, 1)")
  }
  if (!is.logical(se.fit) || length(se.fit) != 1 || is.na(se.fit)) stop_arg("se.fit", "must be TRUE or FALSE")
  if (type == "lpmatrix") {
    if (se.fit)
      stop_arg("se.fit", "must be FALSE with type = \"lpmatrix\" (the matrix has no standard errors: ",
               "they are sqrt(rowSums((Xp %*% vcov(fit, full = TRUE)) * Xp) + attr(Xp, \"nonbasis.var\")), ",
               "see ?predict.gpgam)")
    if (!is.null(terms))
      stop_arg("terms", "is for type = \"terms\"; with type = \"lpmatrix\" select the matrix's columns by name")
    Xp <- predict_lpmatrix(object, new_design(object, newdata, na.action, exclude = exclude), exclude)
    if (!missing(newdata) && !is.null(newdata)) return(Xp)
    # (the fitting rows: padded as the other types, its attributes too, as mgcv pads)
    at <- attributes(Xp)[c("model.offset", "nonbasis.var")]
    Xp <- pad_fitting_rows(object, Xp)
    for (a in names(at)) attr(Xp, a) <- pad_fitting_rows(object, at[[a]])
    return(Xp)
  }
  pad <- if (missing(newdata) || is.null(newdata)) function(x) pad_fitting_rows(object, x) else identity
  nd <- new_design(object, newdata, na.action, exclude = exclude)
  ok <- nd$ok
  lp <- latent_predict(object, nd$X[ok, , drop = FALSE], nd$offset[ok], terms = type == "terms" || length(exclude))
  fill <- function(v) { out <- rep(NA_real_, length(ok)); out[ok] <- v; names(out) <- nd$names; out }
  if (length(exclude) && type != "terms") lp <- exclude_terms(object, nd, lp, exclude, se.fit || interval != "none")
  if (type == "terms") {
    tt <- predict_terms(object, nd, lp)
    if (length(exclude)) tt <- term_columns(tt, setdiff(colnames(tt$fit), exclude))
    if (iterms && se.fit) tt$se.fit <- with_intercept_se(object, tt$se.fit)
    labs <- colnames(tt$fit)
    tt <- term_columns(tt, if (is.null(terms)) mgcv_term_order(labs, labs %in% gp_labels(object$terms))
                           else term_labels_arg(terms, labs, "terms"))
    return(if (se.fit) list(fit = pad(tt$fit), se.fit = pad(tt$se.fit)) else pad(tt$fit))
  }
  if (type == "response") {
    r <- response_moments(object, lp$fit, lp$se)
    fit <- fill(r$mean)
    se <- fill(r$sd)
  } else {
    fit <- fill(lp$fit)
    se <- fill(lp$se)
  }
  if (interval != "none") fit <- interval_columns(object, type, interval, level, fit, fill(lp$fit), fill(lp$se))
  if (!se.fit) return(pad(fit))
  list(fit = pad(fit), se.fit = pad(se), residual.scale = sigma(object))
}

# predict(exclude = ): labels of the fit's terms (type = "terms" columns),
# returned as the fit names them (term_labels_arg()).
check_exclude <- function(object, exclude) {
  if (is.null(exclude)) return(NULL)
  labs <- c(gp_labels(object$terms),
            if (!is.null(object$terms$param)) attr(object$terms$param, "term.labels"))
  term_labels_arg(exclude, labs, "exclude")
}

# The labels `given` (argument `arg`) as the fit's term labels `labs`: each
# one of them, or mgcv's label of the same term (an s() or te() term is a
# gp() term and is labelled so: "s(x0)", "te(x1,x2)", "s(x2):fac1" and
# gaulss()'s "s.1(x)" stand for "gp(x0)", "gp(x1, x2)", "gp(x2):fac1" and
# "gp.1(x)"; spaces do not matter).
term_labels_arg <- function(given, labs, arg) {
  if (!is.character(given) || anyNA(given))
    stop_arg(arg, "must be labels of the fit's terms: ", paste0("\"", labs, "\"", collapse = ", "))
  norm <- function(x) gsub(" ", "", sub("^(s|te)(\\.1)?\\(", "gp\\2(", x))
  out <- given
  miss <- !given %in% labs
  out[miss] <- labs[match(norm(given[miss]), norm(labs))]
  if (anyNA(out))
    stop_arg(arg, "must be labels of the fit's terms: ", paste0("\"", labs, "\"", collapse = ", "),
             " (not ", paste0("\"", given[is.na(out)], "\"", collapse = ", "), ")")
  out
}

# type = "iterms": the standard errors of the gp() terms with the posterior
# variance of the intercept added (mgcv's "iterms"; plot(seWithMean = TRUE)
# adds the same); the parametric terms' are unchanged.
with_intercept_se <- function(object, se) {
  gp <- colnames(se) %in% gp_labels(object$terms)
  se[, gp] <- sqrt(se[, gp]^2 + intercept_variance(object))
  se
}

# The posterior variance of the intercept (0 without one).
intercept_variance <- function(object)
  if (isTRUE(object$intercept) && length(coef(object))) vcov(object)[1, 1] else 0

# The link prediction lp (latent_predict() with terms) without the terms
# `exclude`: its mean minus their means (type = "terms" columns); with `se`,
# its sd from the lpmatrix with their columns and their part of the
# non-basis variance set to 0 (the joint posterior of the other weights).
exclude_terms <- function(object, nd, lp, exclude, se) {
  ok <- nd$ok
  tt <- predict_terms(object, nd, lp)$fit
  lp$fit <- lp$fit - rowSums(tt[ok, exclude, drop = FALSE])
  if (se) {
    Xp <- tryCatch(predict_lpmatrix(object, nd, exclude), scalegp_no_weights = function(e)
      stop_arg("exclude", "with standard errors or intervals needs the posterior of the basis weights, which ",
               "inference = \"", object$engine$name, "\" does not give (predict() without se.fit works)"))
    V <- vcov(object, full = TRUE)
    Xk <- Xp[ok, , drop = FALSE]
    lp$se <- sqrt(pmax(rowSums((Xk %*% V) * Xk) + attr(Xp, "nonbasis.var")[ok], 0))
  }
  lp
}

# A prediction (vector or matrix) at the fitting rows padded with NA where
# the fit's na.action was na.exclude, as predict.lm() and predict.gam() pad
# (the attribute "constant" of type = "terms" kept).
pad_fitting_rows <- function(object, x) {
  const <- attr(x, "constant")
  x <- stats::napredict(object$na.action, x)
  if (!is.null(const)) attr(x, "constant") <- const
  x
}

# Internal design of newdata (or of the fitting data when newdata is missing).
# `mf`: a model frame of the fit's variables, used as it is; `exclude`: the
# labels of terms the prediction leaves out (see new_model_frame()).
new_design <- function(object, newdata, na.action, mf = NULL, exclude = NULL) {
  if (is.null(mf) && (missing(newdata) || is.null(newdata))) {
    if (is.null(object$model)) stop_arg("newdata", "is needed: the fit was made with model = FALSE")
    mf <- object$model
  }
  mf <- mf %||% new_model_frame(object, newdata, na.action, exclude)
  check_finite_columns(mf, names(mf), "newdata")
  for (g in object$terms$gp) for (v in g$spec$vars) {
    # (a column of NA only, as data.frame(x = NA) makes it, is logical: missing numeric values)
    if (g$type != "factor" && is.logical(mf[[v]]) && all(is.na(mf[[v]]))) mf[[v]] <- as.numeric(mf[[v]])
    if (g$type != "factor" && !is.numeric(mf[[v]])) stop_arg("newdata", "variable '", v, "' must be numeric")
  }
  X <- internal_design_na(mf, object$terms)
  off <- stats::model.offset(mf) %||% rep(0, nrow(mf))
  if (!is.null(object$offset_expr) && is.null(mf[["(offset)"]])) {  # gpgam(offset = ) on newdata
    o <- tryCatch(eval(object$offset_expr, as.data.frame(newdata), environment(object$formula)),
                  error = function(e) stop_arg("newdata", "lacks what the offset '", deparse1(object$offset_expr),
                                               "' needs: ", conditionMessage(e)))
    if (is.numeric(o) && length(o) == NROW(newdata) && nrow(mf) != NROW(newdata))
      o <- o[match(rownames(mf), rownames(as.data.frame(newdata)))]  # rows na.action dropped
    if (!is.numeric(o) || length(o) != nrow(mf))
      stop_arg("newdata", "must give the offset '", deparse1(object$offset_expr), "' for each row")
    off <- off + o
  }
  ok <- stats::complete.cases(X) & is.finite(off)
  hilbert_range_warning(object, X, ok)
  X[!ok, ] <- 0
  off[!ok] <- 0
  list(X = X, offset = off, ok = ok, mf = mf, names = rownames(mf))
}

# The model frame of newdata.  A level of a factor not seen in the fit is an
# error, except for the factor of a random effect that enters nowhere else
# (random_effect_only()): there a warning, unless `exclude` leaves the term out.
# A factor of the fit given as numbers or text is read by its levels.
new_model_frame <- function(object, newdata, na.action, exclude = NULL) {
  if (!is.data.frame(newdata)) newdata <- tryCatch(as.data.frame(newdata), error = function(e)
    stop_arg("newdata", "must be a data frame"))
  tt <- object$terms$full
  miss <- setdiff(all.vars(tt), names(newdata))
  if (length(miss)) stop_arg("newdata", "lacks the variable(s) ", paste0("'", miss, "'", collapse = ", "))
  xl <- object$terms$full_xlevels
  for (v in intersect(names(xl), names(newdata))) {
    new <- setdiff(unique(as.character(newdata[[v]][!is.na(newdata[[v]])])), xl[[v]])
    if (!length(new)) next
    levs <- paste0("'", new, "'", collapse = ", ")
    re <- random_effect_only(object, v)
    if (is.null(re)) stop_arg("newdata", "has level(s) ", levs, " of factor '", v, "' not seen when fitting")
    # (a new level of a random effect: its effect is the prior's, as a new
    # subject's; internal_design() codes it -1)
    if (!re %in% exclude)
      warning(sprintf(paste0("newdata has level(s) %s of factor '%s' not seen when fitting: %s predicts its prior ",
                             "there (mean 0, its variance in the standard errors; exclude = \"%s\" leaves it out)"),
                      levs, v, re, re), call. = FALSE)
    xl[[v]] <- NULL
  }
  # (a factor of the fit given as numbers or text, say fac = 2 for level "2": as mgcv's predict.gam, by its levels)
  for (v in intersect(names(xl), names(newdata)))
    if (!is.factor(newdata[[v]])) newdata[[v]] <- factor(as.character(newdata[[v]]), levels = xl[[v]])
  stats::model.frame(tt, newdata, na.action = na.action, xlev = xl)
}

# The label of the gp() random effect of factor `v` when `v` enters the
# model only there (not in the parametric terms, another gp() term or a
# `by`), else NULL.
random_effect_only <- function(object, v) {
  uses <- vapply(object$terms$gp, function(g) v %in% c(g$spec$vars, g$spec$by), logical(1))
  re <- vapply(object$terms$gp, function(g) g$type == "factor", logical(1))
  if (sum(uses) != 1 || !any(uses & re)) return(NULL)
  if (!is.null(object$terms$param) && v %in% all.vars(object$terms$param)) return(NULL)
  object$terms$gp[[which(uses)]]$spec$label
}

# internal_design() that keeps rows with missing values (as NA rows).
internal_design_na <- function(mf, terms) {
  op <- options(na.action = "na.pass")
  on.exit(options(op))
  internal_design(mf, terms)
}

# The terms' posterior means at the rows of a model frame `mf` of the fit
# (its own, object$model, or rows of it): what predict(type = "terms") gives
# at those rows, without re-evaluating the formula's variables (an
# offset(log(t)) frame lacks t).
terms_at_frame <- function(object, mf) {
  nd <- new_design(object, NULL, stats::na.pass, mf = mf)
  lp <- latent_predict(object, nd$X[nd$ok, , drop = FALSE], nd$offset[nd$ok], terms = TRUE)
  predict_terms(object, nd, lp)$fit
}

# The columns `labs` of predict(type = "terms") in mgcv's order: the
# parametric terms, then the gp() terms (`gp`: which of `labs` they are).
mgcv_term_order <- function(labs, gp) c(labs[!gp], labs[gp])

# The columns `cols` of predict_terms()'s list(fit, se.fit), the intercept
# (attribute "constant" of fit) kept.
term_columns <- function(tt, cols) {
  out <- lapply(tt, function(m) m[, cols, drop = FALSE])
  attr(out$fit, "constant") <- attr(tt$fit, "constant")
  out
}

# Columns per term: gp components from the engine, parametric terms x beta.
predict_terms <- function(object, nd, lp) {
  ok <- nd$ok
  n <- length(ok)
  labs <- gp_labels(object$terms)
  fit <- matrix(NA_real_, n, length(labs), dimnames = list(nd$names, labs))
  se <- fit
  if (length(labs)) {
    fit[ok, ] <- lp$term_fit[, seq_along(labs)]
    se[ok, ] <- lp$term_se[, seq_along(labs)]
  }
  const <- 0
  if (!is.null(object$terms$param)) {
    pp <- param_posterior(object)
    op <- options(na.action = "na.pass")
    on.exit(options(op))
    Xp <- stats::model.matrix(object$terms$param, nd$mf, contrasts.arg = object$terms$contrasts)
    asg <- attr(Xp, "assign")
    plabs <- attr(object$terms$param, "term.labels")
    for (j in seq_along(plabs)) {
      cols <- which(asg == j)
      Xj <- Xp[, cols, drop = FALSE]
      fj <- drop(Xj %*% pp$coef[cols])
      sj <- sqrt(pmax(rowSums((Xj %*% pp$vcov[cols, cols, drop = FALSE]) * Xj), 0))
      fit <- cbind(fit, matrix(ifelse(ok, fj, NA), ncol = 1, dimnames = list(NULL, plabs[j])))
      se <- cbind(se, matrix(ifelse(ok, sj, NA), ncol = 1, dimnames = list(NULL, plabs[j])))
    }
    if (object$intercept) const <- unname(pp$coef["(Intercept)"])
  } else if (object$intercept) {
    const <- object$scaling$y$center
  }
  attr(fit, "constant") <- const
  list(fit = fit, se.fit = se)
}

# The lpmatrix of predict(type = "lpmatrix"): the parametric model matrix of
# the new rows, then the gp() terms' columns from the engine
# (weight_posterior()); NA rows where the design has missing values.
predict_lpmatrix <- function(object, nd, exclude = NULL) {
  ok <- nd$ok
  wp <- weight_posterior(object, nd$X[ok, , drop = FALSE], by_term = length(exclude) > 0)
  Xp <- matrix(NA_real_, length(ok), length(wp$coef), dimnames = list(nd$names, names(wp$coef)))
  np <- 0L
  if (!is.null(object$terms$param)) {
    op <- options(na.action = "na.pass")
    on.exit(options(op))
    Xm <- stats::model.matrix(object$terms$param, nd$mf, contrasts.arg = object$terms$contrasts)
    np <- ncol(Xm)
    stopifnot(identical(colnames(Xm), names(wp$coef)[seq_len(np)]))
    Xp[ok, seq_len(np)] <- Xm[ok, , drop = FALSE]
  }
  Xp[ok, np + seq_len(ncol(wp$basis))] <- wp$basis
  attr(Xp, "model.offset") <- ifelse(ok, nd$offset, NA_real_)
  nb <- rep(NA_real_, length(ok))
  nb[ok] <- wp$resid
  if (length(exclude)) {  # (their columns 0, and their part of the non-basis variance)
    gl <- gp_labels(object$terms)
    drop <- np + which(wp$basis_term %in% match(exclude, gl))
    if (np) drop <- c(drop, which(attr(Xm, "assign") %in% match(exclude, attr(object$terms$param, "term.labels"))))
    Xp[ok, drop] <- 0
    nb[ok] <- nb[ok] - rowSums(wp$resid_terms[, intersect(match(exclude, gl), seq_along(gl)), drop = FALSE])
  }
  attr(Xp, "nonbasis.var") <- nb
  Xp
}

# A Hilbert term (gp(basis = "hilbert")) represents its function on a box
# around the data only: its sines vanish at the box's walls and beyond them
# (the centred term is then its level; along an input whose sines are
# centred, g$hilbert$centred, the term goes on as it is at the wall).
# Warns, naming the term and input, when rows of the internal design X lie
# beyond the data's range by more than half the margin to the wall,
# |x - centre| > S + (L - S) / 2 (notes 8.1).
hilbert_range_warning <- function(object, X, ok) {
  for (i in seq_along(object$terms$gp)) {
    g <- object$terms$gp[[i]]
    s <- object$state$specs[[i]]
    if (!identical(g$type, "hilbert")) next
    S <- g$hilbert$S
    # (a term with `by`: the rows where it is not zero, e.g. its level's rows)
    rows <- ok & (if (is.null(s$by_col)) TRUE else !is.na(X[, s$by_col + 1L]) & X[, s$by_col + 1L] != 0)
    for (k in seq_along(s$cols)) {
      t <- abs(X[rows, s$cols[k] + 1L] - s$hs_centre[k])
      far <- t > S[k] + (s$hs_L[k] - S[k]) / 2
      if (!any(far)) next
      walls <- vapply(g$scaling$center[k] + (s$hs_centre[k] + c(-1, 1) * s$hs_L[k]) * g$scaling$scale[k], format, "",
                      digits = 4)
      what <- if (k %in% g$hilbert$centred)
        "towards the walls the term's variation along it fades, and beyond them the term stays as it is at the wall"
      else paste0("towards the walls the prior variance of the term falls to zero, and beyond them the term is its ",
                  "level alone (minus its mean over the data, as centred)")
      warning(sprintf(paste0("%s: %d row(s) of newdata lie beyond the range of '%s' in the data by more than half ",
                             "the way to its Hilbert basis's walls at %s and %s (%d beyond the walls): %s"),
                      g$spec$label, sum(far), g$spec$vars[k], walls[1], walls[2], sum(t > s$hs_L[k]), what),
              call. = FALSE)
    }
  }
}
