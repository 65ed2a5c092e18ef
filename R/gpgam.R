#' Fit a Gaussian-process additive model
#'
#' `gpgam()` fits models of the form
#' \deqn{g(E[y]) = \beta_0 + z^\top\beta + f(x_1, \dots, x_d),\qquad f \sim GP(0, k)}
#' from an mgcv-style formula: `gp()` (or `s()`) terms are Gaussian-process
#' components, bare numeric variables are linear effects, factors are fixed
#' effects and the intercept follows [lm()].
#'
#' **Inference.** `inference = "vi"` is the sparse variational GP (SVGP;
#' Hensman et al. 2013, 2015) with whitened inducing variables.  The parametric
#' coefficients are part of the same variational posterior: they enter as a
#' linear-kernel component with a vague Gaussian prior (sd 100 on the
#' standardised scale), so their posterior is coupled with the GP and
#' `coef()`/`vcov()` report its mean and covariance.  Without `gp()` terms (or
#' with a flat GP) a Gaussian model reproduces the coefficients of [lm()].
#' The objective is the evidence lower bound (ELBO), reported by [logLik()].
#'
#' `inference = "ep"` is expectation propagation for GP classification with a
#' probit likelihood (Hernandez-Lobato and Hernandez-Lobato 2016): the same
#' sparse model (FITC likelihood, inducing points) with one Gaussian site per
#' observation, refined in parallel with damping; after every sweep one Adam
#' step moves the hyperparameters and inducing inputs along the gradient of
#' the EP estimate of the log marginal likelihood (the paper's "inner"
#' updates), which [logLik()] reports.  With `batch_size` below the number
#' of rows the sites are refined one minibatch at a time (stochastic EP; with
#' `gp_control(sites = "tied")` one shared site, O(M^2) memory), and with
#' `gp_control(cluster = )` the data are held in shards on the workers of a
#' parallel cluster (distributed EP, identical results).  EP needs
#' `binomial(link = "probit")`, a 0/1, logical or two-level factor response
#' and unit weights.  Differences from the paper: hyperparameters move by Adam
#' rather than the paper's sign-adaptive (batch) and ADADELTA (minibatch)
#' rules; sites keep their scalars in whitened coordinates when the
#' hyperparameters change; there is no learned latent noise term (a relative
#' jitter stabilises K_uu); a minibatch site is removed with the features of
#' its last refinement, recomputed from stored hyperparameters instead of the
#' paper's stored O(NM) vectors.
#'
#' Inputs and (for the Gaussian family) the response are standardised
#' internally; every reported number is on the scale of the data.
#'
#' @param formula a formula such as `y ~ gp(x1, x2) + z + f`; `offset()` terms
#'   are allowed.
#' @param data a data frame.
#' @param family a family object: `gaussian()`, `binomial(link = "probit")`,
#'   `binomial()` (logit) or `poisson()`.  For binomial, `y` may be 0/1,
#'   logical, a two-level factor (the first level is failure, as in [glm()]) or
#'   a proportion with `weights` giving the number of trials.
#' @param inference inference engine: `"vi"` (sparse variational GP, any
#'   family) or `"ep"` (expectation propagation, binary probit
#'   classification).
#' @param control a [gp_control()] object (or a list of its arguments).
#' @param weights optional prior weights (Gaussian: precision weights;
#'   binomial: number of trials; poisson: multiplies the log-likelihood).
#' @param subset optional subset of rows, as in [lm()].
#' @param na.action what to do with missing values (default
#'   `getOption("na.action")`, normally [na.omit()]).
#' @param model keep the model frame in the fit (`TRUE`, as [lm()] does).
#' @return An object of class `c("gpgam_vi", "gpgam", "scalegp")` (for EP
#'   `"gpgam_ep"` in place of `"gpgam_vi"`); see
#'   [summary.gpgam()], [predict.gpgam()] and [plot.gpgam()].
#' @references Hensman, Fusi and Lawrence (2013) Gaussian processes for big
#'   data. UAI.  Hensman, Matthews and Ghahramani (2015) Scalable variational
#'   Gaussian process classification. AISTATS.  Hernandez-Lobato and
#'   Hernandez-Lobato (2016) Scalable Gaussian process classification via
#'   expectation propagation. AISTATS.  Li, Hernandez-Lobato and Turner (2015)
#'   Stochastic expectation propagation. NeurIPS.
#' @examples
#' set.seed(1)
#' d <- data.frame(x = runif(300, -2, 2), z = rnorm(300))
#' d$y <- sin(2 * d$x) + 0.5 * d$z + rnorm(300, sd = 0.2)
#' fit <- gpgam(y ~ gp(x) + z, data = d, control = gp_control(inducing = 20, iterations = 300))
#' summary(fit)
#' predict(fit, data.frame(x = c(-1, 0, 1), z = 0), se.fit = TRUE)
#'
#' # probit classification by expectation propagation
#' d$cls <- factor(ifelse(d$y > 0, "high", "low"), levels = c("low", "high"))
#' fep <- gpgam(cls ~ gp(x) + z, data = d, family = binomial(link = "probit"), inference = "ep",
#'              control = gp_control(inducing = 20, iterations = 100))
#' logLik(fep)
#' predict(fep, data.frame(x = c(-1, 0, 1), z = 0), type = "response", se.fit = TRUE)
#' @export
gpgam <- function(formula, data, family = gaussian(), inference = "vi", control = gp_control(),
                  weights, subset, na.action, model = TRUE) {
  cl <- match.call()
  if (!is.character(inference) || length(inference) != 1 || !inference %in% c("vi", "ep"))
    stop_arg("inference", "must be \"vi\" (sparse variational GP) or \"ep\" (expectation propagation, ",
             "probit classification)")
  fam <- likelihood_name(family)
  parsed <- parse_gpgam_formula(formula)
  if (missing(data)) stop_arg("data", "is missing; gpgam() needs a data frame")
  if (!is.data.frame(data)) stop_arg("data", "must be a data frame")
  # model frame with the usual na.action / subset / weights semantics
  mf <- match.call(expand.dots = FALSE)
  mf <- mf[c(1L, match(c("data", "subset", "weights", "na.action"), names(mf), 0L))]
  mf$formula <- parsed$full
  mf$drop.unused.levels <- TRUE
  mf[[1L]] <- quote(stats::model.frame)
  mf <- eval(mf, parent.frame())
  n <- nrow(mf)
  if (n < 2) stop_arg("data", "has ", n, " usable row(s); at least 2 are needed")
  y <- prepare_response(stats::model.response(mf), fam$lik)
  ylevels <- attr(y, "levels")
  attr(y, "levels") <- NULL
  w <- stats::model.weights(mf) %||% rep(1, n)
  if (!is.numeric(w) || any(!is.finite(w) | w < 0)) stop_arg("weights", "must be finite and non-negative")
  w <- as.numeric(w)
  off <- as.numeric(stats::model.offset(mf) %||% rep(0, n))
  if (any(!is.finite(off))) stop_arg("offset", "has non-finite values")
  check_finite_columns(mf, names(mf), "data")
  control <- resolve_control(control, n)
  problem <- build_problem(parsed, mf, y, w, off, fam, control)
  problem$ylevels <- ylevels
  t0 <- proc.time()[["elapsed"]]
  res <- switch(inference, vi = run_vi(problem, control), ep = run_ep(problem, control))
  elapsed <- proc.time()[["elapsed"]] - t0
  fit <- collect_fit(problem, res, control, inference)
  fit$call <- cl
  fit$formula <- formula
  fit$timing <- c(fit = elapsed, res$seconds, per_iteration = res$seconds[["iterations"]] / max(1, res$iterations))
  fit$na.action <- attr(mf, "na.action")
  if (model) fit$model <- mf
  fit
}

# Builds everything the engine needs: internal design, component specs,
# scalings, initial values.
build_problem <- function(parsed, mf, y, w, off, fam, control) {
  n <- nrow(mf)
  gaussian <- fam$lik == "gaussian"
  # response scaling (Gaussian only; no centring without an intercept)
  ysc <- if (gaussian) {
    list(center = if (parsed$intercept) sum(w * y) / sum(w) else 0,
         scale = if (stats::sd(y) > 0) stats::sd(y) else 1)
  } else list(center = 0, scale = 1)
  ys <- (y - ysc$center) / ysc$scale
  offs <- off / ysc$scale
  terms <- list(gp = list(), param = NULL)
  comps <- list()
  col <- 0L
  for (i in seq_along(parsed$specs)) {
    built <- gp_component(parsed$specs[[i]], mf, parsed$specs[-i], length(parsed$specs), ysc, control, col)
    comps[[length(comps) + 1]] <- built$comp
    terms$gp[[length(terms$gp) + 1]] <- built$term
    col <- col + length(built$comp$cols)
  }
  has_param <- parsed$intercept || length(attr(terms(parsed$param), "term.labels")) > 0
  if (has_param) {
    pt <- stats::delete.response(terms(parsed$param))
    Xp <- stats::model.matrix(pt, mf)
    psc <- param_scaling(Xp)
    if (qr(Xp)$rank < ncol(Xp))
      warning("the parametric design is rank deficient; its coefficients are identified only by the prior",
              call. = FALSE)
    terms$param <- pt
    terms$param_scaling <- psc
    terms$contrasts <- attr(Xp, "contrasts")
    terms$param_assign <- attr(Xp, "assign")
    terms$xlevels <- stats::.getXlevels(pt, mf)
    comps[[length(comps) + 1]] <- list(kind = "linear", cols = col + seq_len(ncol(Xp)) - 1L,
                                       prior_sd = rep(100, ncol(Xp)))
  }
  if (length(comps) == 0) stop_arg("formula", "has no terms (no gp(), no parametric terms, no intercept)")
  terms$full <- stats::delete.response(terms(parsed$full))
  terms$full_xlevels <- stats::.getXlevels(terms$full, mf)
  X <- internal_design(mf, terms)
  noise0 <- if (gaussian) (control$sigma %||% (stats::sd(y) / 3)) / ysc$scale else 1
  list(X = X, y = ys, w = w, offset = offs, comps = comps, terms = terms, yscaling = ysc,
       family = fam$family, lik = fam$lik, log_noise = log(max(noise0^2 - 1e-6, 1e-12)),
       intercept = parsed$intercept, n = n, y_raw = y, w_raw = w, offset_raw = off)
}

# Initial inducing inputs (standardised scale) of one gp() term.
inducing_init <- function(Xg, spec, sc, control) {
  if (!is.null(spec$inducing)) {
    Z <- standardise(spec$inducing, sc)
    if (nrow(Z) > 1 && anyDuplicated(Z)) stop_arg("inducing", "has duplicated rows")
    return(unname(Z))
  }
  k <- spec$k %||% control$inducing %||% c(20L, 64L, 100L)[min(ncol(Xg), 3L)]
  nu <- n_unique_rows(Xg)
  if (k > nu) {
    if (!is.null(spec$k) || !is.null(control$inducing))
      warning(sprintf("%s: '%s' = %d exceeds the %d unique input rows; using %d inducing points",
                      spec$label, if (is.null(spec$k)) "inducing" else "k", k, nu, nu), call. = FALSE)
    k <- nu
  }
  Xs <- standardise(Xg, sc)
  if (k == nu) return(unname(utils::head(Xs[!duplicated(Xs), , drop = FALSE], k)))
  unname(.kmeans(Xs, k, control$seed))
}
