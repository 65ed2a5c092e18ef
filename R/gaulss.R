# The location-scale Gaussian: gpgam(list(y ~ ..., ~ ...), family = gaulss()),
# a heteroscedastic GP additive model with two additive predictors, the mean
# and the log noise sd, each a sum of gp() and parametric terms (chained GPs,
# Saul, Hensman, Vehtari and Lawrence 2016).  The posterior factorises over
# the two predictors, q(f) q(g), each a coupled sparse variational posterior
# (inference = "vi").  Given q(g) the ELBO in q(f) and f's hyperparameters
# is that of a Gaussian fit with known row precisions w E[exp(-2 g)]; given
# q(f) the ELBO in q(g) is, with eta = 2 g, that of a Gamma fit of shape 1/2
# and log link to the response r = E[(y - f)^2] (both in closed form).  The
# fit alternates the two (block coordinate ascent on one objective, warm
# started) until a cycle raises the joint ELBO by less than
# gp_control(tol) x rows: at a fixed point both blocks are stationary, so the
# joint ELBO is.  The result holds the two fits (class "gpgam_vi"; the scale
# fit's predictor is eta = 2 g, halved whenever it is reported) and has its
# own methods.  fit$objective is the joint ELBO, fit$log_prior the log prior
# of both fits' hyperparameters, fit$trace their sum after each cycle (the
# quantity the cycles raise).

#' Location-scale Gaussian models: mean and log sd each additive
#'
#' `gpgam(list(y ~ <mean terms>, ~ <log-sd terms>), family = mgcv::gaulss())`
#' fits the heteroscedastic model
#' \deqn{y_i \sim N(\mu_i, \sigma_i^2),\quad \mu_i = f(x_i),\quad \log\sigma_i = g(x_i),}{y_i ~ N(mu_i, sigma_i^2), mu_i = f(x_i), log sigma_i = g(x_i),}
#' with \eqn{f}{f} and \eqn{g}{g} each a sum of `gp()` and parametric terms of
#' its own formula (the second formula has no response), as mgcv's list of
#' formulas for `gaulss()`.  This is the chained GP of Saul, Hensman, Vehtari
#' and Lawrence (2016): the posterior is Gaussian and factorises over the two
#' predictors, \eqn{q(f)q(g)}{q(f) q(g)}, each the coupled sparse variational
#' posterior of `inference = "vi"` over its own inducing variables and
#' coefficients.
#'
#' **Link of the second predictor.** It is the log of the sd.  mgcv's
#' `gaulss()` models \eqn{1/\sigma}{1/sigma} through its `"logb"` link; only
#' the family's name is read from the object, and `family(fit)` is a gaulss
#' family with links identity (mean) and log (sd).
#'
#' **Fitting.** The expected log-likelihood of a row is, in closed form,
#' \eqn{-\frac12\log 2\pi - m_g - \frac12[(y - m_f)^2 + v_f] e^{-2m_g + 2v_g}}{-log(2 pi)/2 - m_g - ((y - m_f)^2 + v_f) exp(-2 m_g + 2 v_g) / 2}
#' (\eqn{m, v}{m, v} the posterior means and variances of the two predictors
#' at the row).  Given \eqn{q(g)}{q(g)} it is the log-likelihood of a Gaussian fit
#' with known precisions \eqn{E[e^{-2g}]}{E[exp(-2 g)]}; given
#' \eqn{q(f)}{q(f)}, of a Gamma fit with shape 1/2 and log link (predictor
#' \eqn{2g}{2 g}) to the response \eqn{(y - m_f)^2 + v_f}{(y - m_f)^2 + v_f}.
#' The fit starts from a homoscedastic Gaussian fit of the mean formula and
#' then alternates the two conditional fits (each to a stationary point, with
#' its hyperparameters started where the previous one ended): block
#' coordinate ascent on one objective, the joint ELBO
#' \eqn{\sum_i w_i E[\log p(y_i \mid f, g)] - KL(q(f)) - KL(q(g))}{sum_i w_i E[log p(y_i | f, g)] - KL(q(f)) - KL(q(g))}
#' (plus the log priors of both sets of hyperparameters), which never
#' decreases.  It stops when a cycle raises it by less than
#' `gp_control(tol)` times the number of rows (converged, if the last two
#' conditional fits reached their stationary points: then both blocks are
#' stationary given each other, so the joint ELBO is at a stationary
#' point), or after `gp_control(cycles = )` cycles (not converged; 50 by
#' default, see [vi_options()]).
#' `gp_control()` applies to both fits (inducing points per term, threads,
#' seed, priors); `sigma` and `fixed = "sigma"` do not apply.  Prior weights
#' multiply each row's log-likelihood.  Offsets (terms or the `offset`
#' argument) are for the mean only.
#'
#' **Methods.** `print()`, `summary()` (both predictors' parametric
#' coefficients, term tests and hyperparameters; the log-sd predictor's on
#' the log-sd scale), `plot()` (the mean's terms, then the log sd's),
#' `predict()` (`type = "link"`: columns `mean` and `log_sd` with their
#' posterior sds; `"response"`: the posterior means of \eqn{\mu}{mu} and of
#' \eqn{\sigma = e^g}{sigma = exp(g)} with their posterior sds;
#' `"terms"`: both predictors' terms, the log sd's named with `.1` as mgcv
#' does, e.g. `gp.1(x)`; `interval = "confidence"` for \eqn{\mu}{mu},
#' `"prediction"` for a new y, whose predictive distribution mixes
#' \eqn{N(m_f, v_f + e^{2g})}{N(m_f, v_f + exp(2 g))} over the posterior of
#' \eqn{g}{g}), `fitted()` (a matrix with columns `mean` and `sd`, as
#' `predict(type = "response")`), `residuals()` (`"response"`: \eqn{y -
#' \hat\mu}{y - mu}; `"pearson"` and `"deviance"`: divided by the fitted
#' sd), `sigma()` (the fitted sd of every row), `coef()`, `vcov()`,
#' `logLik()` (the joint ELBO), `simulate()`, `update()` (a list of two
#' formulas updates both predictors, one formula the mean's), `anova(fit1,
#' fit2, ...)` (the joint ELBOs of fits of the same data side by side, as
#' [anova.gpgam()] compares fits; of one fit it refuses: `summary()` tests
#' the terms); `AIC()` and `BIC()` refuse.
#'
#' @name gaulss
#' @references Saul, Hensman, Vehtari and Lawrence (2016) Chained Gaussian
#'   processes. AISTATS.  Wood, Pya and Saefken (2016) Smoothing parameter
#'   and model selection for general smooth models. JASA 111, 1548-1563
#'   (mgcv's `gaulss()`).
#' @seealso [gpgam()], [mgcv::gaulss()]
#' @examples
#' \donttest{
#' data(mcycle, package = "MASS")
#' fit <- gpgam(list(accel ~ gp(times), ~ gp(times)), data = mcycle, family = mgcv::gaulss(),
#'              control = gp_control(verbose = FALSE))
#' summary(fit)
#' plot(fit, pages = 1)
#' head(predict(fit, type = "response"))
#' predict(fit, data.frame(times = c(10, 30)), interval = "prediction")
#' }
NULL

# Whether `family` is (mgcv's) gaulss() family object, or the name "gaulss".
is_gaulss <- function(family) {
  if (is.character(family)) return(identical(family, "gaulss"))
  if (is.function(family)) family <- tryCatch(family(), error = function(e) NULL)
  inherits(family, "family") && identical(family$family, "gaulss")
}

# The family of a fit: the gaulss family with the links this model uses,
# identity for the mean and log for the sd (linfo as mgcv's general families).
gaulss_family <- function() {
  structure(list(family = "gaulss", link = c("identity", "log"),
                 linfo = list(stats::make.link("identity"), stats::make.link("log")), nlp = 2L),
            class = "family")
}

# family = "gaulss": mgcv's family object, or (without mgcv) one that names it.
mgcv_gaulss <- function() {
  if (requireNamespace("mgcv", quietly = TRUE)) return(mgcv::gaulss())
  structure(list(family = "gaulss", link = c("identity", "log")), class = "family")
}

gaulss_gpgam <- function(cl, envir, formulas, family, inference, control, model) {
  if (!identical(inference, "vi"))
    stop_arg("inference", "= \"", inference, "\" does not fit family = gaulss(); use inference = \"vi\" (the default)")
  if (length(formulas) != 2 || !all(vapply(formulas, inherits, TRUE, "formula")))
    stop_arg("formula", "for family = gaulss() must be a list of two formulas: list(y ~ <mean terms>, ~ <log-sd terms>)")
  if (length(formulas[[1]]) != 3) stop_arg("formula", "'s first formula must have the response: y ~ gp(x) + ...")
  if (length(formulas[[2]]) != 2)
    stop_arg("formula", "'s second formula (the log sd) must be one-sided: ~ gp(x) + ...")
  data <- if (!is.null(cl$data)) eval(cl$data, envir)
  data_arg <- if (is.data.frame(data)) data
  f1 <- formulas[[1]]
  f2 <- formulas[[2]]
  f2full <- stats::as.formula(call("~", f1[[2]], f2[[2]]), env = environment(f2) %||% envir)
  p1 <- parse_gpgam_formula(f1, data_arg)
  p2 <- parse_gpgam_formula(f2full, data_arg)
  if (!is.null(attr(terms(f2full), "offset")))
    stop_arg("formula", "'s second formula (the log sd) has an offset; offsets are for the mean only")
  both <- stats::as.formula(call("~", f1[[2]], call("+", p1$full[[3]], p2$full[[3]])), env = environment(p1$full))
  mf <- gp_model_frame(cl, envir, both)
  engine <- get_engine("vi")
  if (!is.null(control$sigma) || "sigma" %in% control$fixed)
    warning("'control': gp_control(sigma = , fixed = \"sigma\") do not apply to family = gaulss() ",
            "(the log sd is modelled)", call. = FALSE)
  control$fixed <- setdiff(control$fixed, "sigma")
  control$sigma <- NULL
  verbose <- isTRUE(control$verbose)
  control$verbose <- FALSE
  fam_g <- likelihood_name(stats::gaussian())
  y <- mf[[1L]]
  if (!is.numeric(y) || is.matrix(y)) stop_arg(names(mf)[1L], "of family = gaulss() must be a numeric vector")
  if (all(is.finite(y)) && diff(range(y)) == 0)
    stop_arg(names(mf)[1L], "is constant (", format(y[1]), "); a location-scale model needs a varying response")
  ctl1 <- resolve_control(control, nrow(mf), engine, "gaussian")
  cycles <- ctl1$options$cycles %||% 50L
  t0 <- proc.time()[["elapsed"]]
  # the homoscedastic start: the mean formula with the noise sd estimated
  s0 <- gaulss_setup("mean", p1, mf, fam_g, ctl1)
  w_user <- s0$w
  s <- s0$yscaling$scale
  first <- gaulss_subfit(engine, s0, ctl1)
  s0 <- first$setup
  # the mean fit with the noise fixed at 1 on the internal scale (precisions in the weights)
  ctl_f <- ctl1
  ctl_f$fixed <- union(ctl_f$fixed, "sigma")
  sf <- s0  # (gp_setup() with sigma = s would give the same setup, and warn again)
  sf$log_noise <- log(1 - 1e-6)
  sf$comps <- warm_comps(sf$comps, first$res$specs)
  # the scale fit: Gamma with shape 1/2 and log link on r, no offset (its
  # frame: that of both formulas with the second's terms, and their predvars)
  mf2 <- mf
  mf2[["(offset)"]] <- NULL
  attr(mf2, "terms") <- with_predvars(stats::terms(p2$full), attr(mf, "terms"))
  r <- gaulss_r(y, first$mom)
  mf2[[1L]] <- r
  fam_s <- likelihood_name(stats::Gamma(link = "log"))
  fam_s$theta <- 0.5
  ctl2 <- resolve_control(control, nrow(mf), engine, "gamma")
  ctl2$seed <- ctl1$seed
  sg <- gaulss_setup("scale", p2, mf2, fam_s, ctl2)
  fg <- mean_f <- NULL
  mom_f <- first$mom
  objective <- -Inf
  trace <- numeric()
  converged <- FALSE
  evaluations <- first$res$evaluations %||% 0
  for (k in seq_len(cycles)) {
    r <- gaulss_r(y, mom_f)
    sg$y <- sg$y_raw <- r
    fg <- gaulss_subfit(engine, sg, ctl2)
    sg <- fg$setup
    sg$comps <- warm_comps(sg$comps, fg$res$specs)
    prec <- exp(-fg$mom$fit + fg$mom$se^2 / 2)  # E[exp(-eta)] = E[exp(-2 g)]
    sf$w <- w_user * s^2 * prec
    mean_f <- gaulss_subfit(engine, sf, ctl_f)
    sf <- mean_f$setup
    sf$comps <- warm_comps(sf$comps, mean_f$res$specs)
    mom_f <- mean_f$mom
    evaluations <- evaluations + (fg$res$evaluations %||% 0) + (mean_f$res$evaluations %||% 0)
    elbo <- gaulss_objective(y, w_user, mom_f, fg$mom, mean_f, fg)
    log_prior <- (mean_f$res$log_prior %||% 0) + (fg$res$log_prior %||% 0)
    new <- elbo + log_prior  # what the cycles raise
    trace <- c(trace, new)
    change <- new - objective
    objective <- new
    if (verbose) inform(sprintf("gaulss cycle %d: joint ELBO %.6g + log prior %.4g = %.6g%s", k, elbo, log_prior, new,
                                if (k > 1) sprintf(" (change %.3g)", change) else ""))
    if (k > 1 && abs(change) <= ctl1$tol * nrow(mf)) {
      converged <- TRUE
      break
    }
  }
  elapsed <- proc.time()[["elapsed"]] - t0
  fm <- mean_f$fit
  fs <- fg$fit
  # (a stationary point needs both conditional fits at theirs too)
  sub_ok <- isTRUE(fm$converged) && isTRUE(fs$converged)
  stop_msg <- if (!sub_ok) "the last mean or log-sd fit did not converge (see fit$mean$stop and fit$scale$stop)"
              else if (converged) "stationary point"
              else sprintf("%d cycles (vi_options(cycles)) without convergence", cycles)
  converged <- converged && sub_ok
  fm$formula <- f1
  fs$formula <- f2
  fm$offset_expr <- cl$offset
  fm$call <- fs$call <- cl
  fm$model <- mf
  fs$model <- mf2
  fit <- list(mean = fm, scale = fs, call = cl, formula = formulas, family = gaulss_family(), likelihood = "gaulss",
              engine = engine, n = nrow(mf), objective = elbo, log_prior = log_prior,
              trace = trace, iterations = length(trace), evaluations = evaluations, converged = converged,
              stop = stop_msg,
              y = y, prior.weights = w_user, na.action = attr(mf, "na.action"),
              control = c(ctl1[setdiff(names(ctl1), "verbose")], list(verbose = verbose)),
              timing = c(fit = elapsed, per_iteration = elapsed / max(1, length(trace))),
              title = "Location-scale Gaussian GP additive model (chained GPs)")
  fit$df <- fm$df - 1 + fs$df - 1  # (the sub-fits count a noise sd and a Gamma shape that are not estimated)
  lp <- gaulss_response(mom_f, fg$mom)
  fit$fitted.values <- cbind(mean = lp$mean, sd = lp$sd)
  fit$linear.predictors <- cbind(mean = mom_f$fit, log_sd = fg$mom$fit / 2)
  if (!model) fit$mean$model <- fit$scale$model <- NULL
  hilbert_check(fm)
  hilbert_check(fs)
  class(fit) <- c("gpgam_ls", "scalegp")
  if (!converged)
    warn_convergence(
      if (!sub_ok) paste0("the location-scale fit did not converge: ", stop_msg)
      else paste0(sprintf("the location-scale fit did not converge in %d cycle%s%s; ", cycles,
                          if (cycles > 1) "s" else "",
                          if (is.finite(change)) sprintf(" (the last raised the joint ELBO by %.3g)", change) else ""),
                  "increase gp_control(cycles = )"))
  fit
}

# gp_setup() of the mean's or the scale's formula, its warnings saying which.
gaulss_setup <- function(which, ...) {
  withCallingHandlers(gp_setup(...), warning = function(w) {
    warning("the ", which, " formula: ", conditionMessage(w), call. = FALSE)
    invokeRestart("muffleWarning")
  })
}

# One conditional fit: the engine's result, the fit object, the latent
# moments at the rows (data scale: fit, se) and the setup (a Hilbert basis
# too small for the fitted lengthscales is enlarged and refitted, as gpgam()
# does).
gaulss_subfit <- function(engine, setup, control) {
  fitted <- engine_fit_adapted(engine, setup, control)
  res <- fitted$res
  setup <- fitted$setup
  fit <- collect_fit(setup, res, control, engine)
  mom <- latent_predict(fit, setup$X, setup$offset_raw, se = TRUE)
  list(res = res, fit = fit, mom = mom, setup = setup)
}

# Start the hyperparameters (and inducing inputs) of `comps` where a fit ended.
warm_comps <- function(comps, specs) {
  for (i in seq_along(comps)) {
    for (v in c("log_var", "log_ls", "Z"))
      if (!is.null(specs[[i]][[v]]) && !is.null(comps[[i]][[v]])) comps[[i]][[v]] <- specs[[i]][[v]]
  }
  comps
}

# The response of the scale fit: E[(y - f)^2] under q(f) (data scale), kept
# above 1e-300 so that its log is finite.
gaulss_r <- function(y, mom) pmax((y - mom$fit)^2 + mom$se^2, 1e-300)

# E[log N(y; f, exp(eta))] for independent f ~ N(mf, vf), eta ~ N(m_eta, v_eta)
# (eta = 2 g, the log variance), in closed form.
gaulss_ell <- function(y, mf, vf, m_eta, v_eta) {
  -0.5 * log(2 * pi) - m_eta / 2 - 0.5 * ((y - mf)^2 + vf) * exp(-m_eta + v_eta / 2)
}

# The joint ELBO (as logLik() of a gpgam fit, without the log priors of the
# hyperparameters, which the fits add to it when they climb).
gaulss_objective <- function(y, w, mom_f, mom_eta, mean_f, scale_f) {
  ell <- sum(w * gaulss_ell(y, mom_f$fit, mom_f$se^2, mom_eta$fit, mom_eta$se^2))
  ell - mean_f$res$kl - scale_f$res$kl
}

# Posterior means and sds of mu = f and sigma = exp(g) (g = eta / 2, lognormal).
gaulss_response <- function(mom_f, mom_eta) {
  mg <- mom_eta$fit / 2
  vg <- mom_eta$se^2 / 4
  list(mean = mom_f$fit, mean_se = mom_f$se, sd = exp(mg + vg / 2),
       sd_se = sqrt(pmax(expm1(vg), 0)) * exp(mg + vg / 2))
}

# The two predictors at newdata (or the fitting rows): the latent moments of
# the mean and of eta = 2 g.
gaulss_moments <- function(object, newdata, terms = FALSE) {
  # (both designs keep every row, so that their rows stay paired; predict()
  # applies the user's na.action to the rows where either has a missing value)
  nd1 <- new_design(object$mean, newdata, stats::na.pass)
  nd2 <- new_design(object$scale, newdata, stats::na.pass)
  ok <- nd1$ok & nd2$ok
  nd1$ok <- nd2$ok <- ok
  lp1 <- latent_predict(object$mean, nd1$X[ok, , drop = FALSE], nd1$offset[ok], terms = terms)
  lp2 <- latent_predict(object$scale, nd2$X[ok, , drop = FALSE], nd2$offset[ok], terms = terms)
  list(f = lp1, eta = lp2, ok = ok, names = nd1$names, nd1 = nd1, nd2 = nd2)
}

# The rows predict() returns: `na.action` applied to the rows (`ok`: no
# missing value in either predictor's variables): all of them with
# na.pass (NA where not ok), those that are ok with na.omit or na.exclude,
# an error with na.fail.
gaulss_rows <- function(ok, names, na.action) {
  flag <- data.frame(ok = ifelse(ok, 1, NA), row.names = make.unique(as.character(names)))
  kept <- tryCatch(na.action(flag), error = function(e) stop_arg("na.action", "failed: ", conditionMessage(e)))
  match(rownames(kept), rownames(flag))
}

# The labels of the log sd's terms as mgcv names a second predictor's:
# gp.1(x) for a gp() term, z.1 for a parametric one.
gaulss_scale_labels <- function(object, labels) {
  gp <- gp_labels(object$scale$terms)
  ifelse(labels %in% gp, sub("(", ".1(", labels, fixed = TRUE), paste0(labels, ".1"))
}

#' @rdname gaulss
#' @param object,x a location-scale fit (`gpgam(list(...), family = gaulss())`).
#' @param newdata a data frame (default: the fitting rows, padded with `NA`
#'   for rows dropped by `na.action = na.exclude` when fitting).
#' @param type for `predict()`: `"link"`, `"response"` or `"terms"`; for
#'   `residuals()`: `"deviance"`, `"pearson"` or `"response"` (see Methods).
#' @param se.fit whether to return posterior sds.
#' @param na.action what to do with rows of `newdata` with a missing value in
#'   a variable of either predictor: [stats::na.pass] (default) predicts NA,
#'   [stats::na.omit] drops them, [stats::na.fail] stops.
#' @param terms with `type = "terms"`, the labels of the columns to return
#'   (default: all, in mgcv's order: the parametric terms of both
#'   predictors, then their `gp()` terms).
#' @param interval `"none"`, `"confidence"` (for the mean) or `"prediction"` (for a new y).
#' @param level the interval's probability.
#' @param ... unused.
#' @export
predict.gpgam_ls <- function(object, newdata, type = c("link", "response", "terms"), se.fit = FALSE,
                             na.action = stats::na.pass, terms = NULL,
                             interval = c("none", "confidence", "prediction"), level = 0.95, ...) {
  if (is.character(type) && length(type) == 1 && type %in% c("lpmatrix", "iterms"))
    stop_arg("type", "= \"", type, "\" is not available for location-scale (gaulss) fits; predict() of ",
             "fit$mean or fit$scale, each a gpgam fit of one predictor, gives it")
  type <- match_arg(type)
  if (!is.null(list(...)$exclude))
    stop_arg("exclude", "is not supported for location-scale (gaulss) fits; take the terms from type = \"terms\"")
  interval <- match_arg(interval)
  if (!is.logical(se.fit) || length(se.fit) != 1 || is.na(se.fit)) stop_arg("se.fit", "must be TRUE or FALSE")
  if (interval != "none") {
    if (type == "terms") stop_arg("interval", "is for type = \"link\" or \"response\"")
    if (!is.numeric(level) || length(level) != 1 || !(level > 0 && level < 1))
      stop_arg("level", "must be a probability in (0, 1)")
  }
  if (missing(newdata)) newdata <- NULL
  # (without newdata: padded with NA for rows na.exclude dropped, as predict.gpgam())
  pad <- if (is.null(newdata)) function(x) pad_fitting_rows(object, x) else identity
  m <- gaulss_moments(object, newdata, terms = type == "terms")
  ok <- m$ok
  rows <- gaulss_rows(ok, m$names, na.action)
  fill <- function(v) { out <- matrix(NA_real_, length(ok), NCOL(v)); out[ok, ] <- v; out }
  if (type == "terms") {
    t1 <- predict_terms(object$mean, m$nd1, m$f)
    t2 <- predict_terms(object$scale, m$nd2, m$eta)
    fit <- cbind(t1$fit, t2$fit / 2)
    colnames(fit) <- c(colnames(t1$fit), gaulss_scale_labels(object, colnames(t2$fit)))
    se <- cbind(t1$se.fit, t2$se.fit / 2)
    colnames(se) <- colnames(fit)
    if (!is.null(terms)) terms <- term_labels_arg(terms, colnames(fit), "terms")
    # (mgcv's order: the parametric terms of both predictors, then their gp() terms)
    keep <- terms %||% mgcv_term_order(colnames(fit), c(colnames(t1$fit) %in% gp_labels(object$mean$terms),
                                                        colnames(t2$fit) %in% gp_labels(object$scale$terms)))
    const <- c(mean = attr(t1$fit, "constant") %||% 0, log_sd = (attr(t2$fit, "constant") %||% 0) / 2)
    fit <- fit[rows, keep, drop = FALSE]
    attr(fit, "constant") <- const
    if (!se.fit) return(pad(fit))
    return(list(fit = pad(fit), se.fit = pad(se[rows, keep, drop = FALSE])))
  }
  if (!is.null(terms)) stop_arg("terms", "is for type = \"terms\"")
  if (type == "link") {
    fit <- fill(cbind(mean = m$f$fit, log_sd = m$eta$fit / 2))
    se <- fill(cbind(mean = m$f$se, log_sd = m$eta$se / 2))
    colnames(fit) <- colnames(se) <- c("mean", "log_sd")
  } else {
    r <- gaulss_response(m$f, m$eta)
    fit <- fill(cbind(r$mean, r$sd))
    se <- fill(cbind(r$mean_se, r$sd_se))
    colnames(fit) <- colnames(se) <- c("mean", "sd")
  }
  rownames(fit) <- rownames(se) <- m$names
  if (interval != "none") {
    lo_p <- (1 - level) / 2
    z <- stats::qnorm(1 - lo_p)
    mu <- fill(m$f$fit)[, 1]
    if (interval == "confidence") {
      half <- z * fill(m$f$se)[, 1]
    } else {
      half <- rep(NA_real_, length(ok))
      half[ok] <- gaulss_predictive_half(m$f$se, m$eta$fit / 2, m$eta$se / 2, 1 - lo_p)
    }
    fit <- cbind(fit = mu, lwr = mu - half, upr = mu + half)
    rownames(fit) <- m$names
  }
  fit <- fit[rows, , drop = FALSE]
  if (!se.fit) return(pad(fit))
  list(fit = pad(fit), se.fit = pad(se[rows, , drop = FALSE]))
}

# Half the central predictive interval of a new y at each row: y - m_f is a
# mixture of N(0, v_f + exp(2 g)) over g ~ N(mg, sg^2) (20-node Gauss-Hermite),
# symmetric about 0; its p-quantile q solves sum_k w_k Phi(q / s_k) = p and
# lies in [0, qnorm(p) max_k s_k] (every s_k gives Phi(q / s_k) >= p at the
# upper end).  80 bisection steps (to 2^-80 of the bracket).
gaulss_predictive_half <- function(se_f, mg, sg, p) {
  rule <- gauss_hermite(20)
  g <- outer(sg, sqrt(2) * rule$t) + mg
  sk <- sqrt(se_f^2 + exp(2 * g))
  wts <- rule$w / sqrt(pi)
  lo <- numeric(length(mg))
  hi <- stats::qnorm(p) * apply(sk, 1, max)
  for (it in seq_len(80)) {
    mid <- (lo + hi) / 2
    above <- drop(stats::pnorm(mid / sk) %*% wts) >= p
    hi[above] <- mid[above]
    lo[!above] <- mid[!above]
  }
  (lo + hi) / 2
}

#' @rdname gaulss
#' @param digits significant digits.
#' @export
print.gpgam_ls <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("\n", x$title, " (", engine_label(x$mean), ")\n", sep = "")
  cat("Formula: ", deparse1(x$formula[[1]]), "\n         ", deparse1(x$formula[[2]]), "  (log sd)\n", sep = "")
  cat("Family: gaulss (mean: identity, sd: log), n = ", x$n, "\n", sep = "")
  for (part in c("mean", "log_sd")) {
    f <- if (part == "mean") x$mean else x$scale
    div <- if (part == "mean") 1 else 2
    cat(if (part == "mean") "Mean:\n" else "Log sd:\n")
    for (g in f$params$gp)
      cat(sprintf("  %s: %s kernel, variance %s%s, edf %s\n", g$label, g$kernel,
                  format(g$variance / div^2, digits = digits),
                  if (length(g$lengthscale)) paste0(", lengthscale ", paste(vapply(g$lengthscale, format, "", digits = digits),
                                                                             collapse = ", ")) else "",
                  format(g$edf, digits = digits)))
    cf <- coef(f) / div
    if (length(cf)) {
      cat("  Coefficients:\n")
      print(cf, digits = digits)
    }
  }
  cat("Joint ELBO: ", format(x$objective, digits = digits + 3),
      if (!x$converged) paste0(" (NOT converged: ", x$stop, ")"), "\n\n", sep = "")
  invisible(x)
}

#' @rdname gaulss
#' @export
summary.gpgam_ls <- function(object, ...) {
  sm <- summary(object$mean)
  ss <- summary(object$scale)
  ss$coefficients[, 1:2] <- ss$coefficients[, 1:2, drop = FALSE] / 2
  if (!is.null(ss$terms)) ss$terms$variance <- ss$terms$variance / 4
  structure(list(call = object$call, n = object$n, engine = engine_label(object$mean), mean = sm, scale = ss,
                 objective = object$objective, log_prior = object$log_prior, cycles = object$iterations,
                 converged = object$converged, stop = object$stop, time = object$timing[["fit"]],
                 threads = object$control$threads),
            class = "summary.gpgam_ls")
}

#' @rdname gaulss
#' @export
print.summary.gpgam_ls <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("\nFamily: gaulss\nLink functions: identity (mean), log (sd)\nInference:", x$engine,
      "\n\nCall:\n")
  print(x$call)
  for (part in c("mean", "scale")) {
    cat(if (part == "mean") "\n== Mean ==\n" else "\n== Log sd ==\n")
    print_term_tables(x[[part]], digits, scale = "variance on the scale of this predictor")
  }
  cat(sprintf("\nJoint ELBO = %s (a lower bound on the log marginal likelihood), n = %d\n",
              format(x$objective, digits = digits + 3), x$n))
  if (isTRUE(x$log_prior != 0))
    cat("Log prior of the hyperparameters:", format(x$log_prior, digits = digits + 1), "\n")
  cat(sprintf("%d cycles of the mean and log-sd fits (%d thread%s), %.2f s\n", x$cycles, x$threads,
              if (x$threads > 1) "s" else "", x$time))
  cat(if (x$converged) "Converged: the last cycle raised the joint ELBO by less than tol x n (a stationary point)"
      else paste("Not converged:", x$stop), "\n\n", sep = "")
  invisible(x)
}

#' @rdname gaulss
#' @param which `"terms"` (default): the mean's term panels, then the log
#'   sd's (named `gp.1(x)`), drawn by [plot.gpgam()]; `"trace"`: the joint
#'   ELBO plus the log prior after each cycle.
#' @param select,pages,all.terms,shift,trans as [plot.gpgam()]; `select`
#'   indexes the mean's panels followed by the log sd's, and `shift` and
#'   `trans` apply to each predictor on its own scale (the log sd's curves are
#'   g, not 2 g).
#' @param residuals partial residuals of the mean's terms.
#' @export
plot.gpgam_ls <- function(x, which = c("terms", "trace"), select = NULL, pages = 0, residuals = FALSE,
                          all.terms = FALSE, shift = 0, trans = I, ...) {
  which <- match_arg(which)
  if (which == "trace") {
    graphics::plot(seq_along(x$trace), x$trace, type = "b", xlab = "cycle", ylab = "joint ELBO + log prior", ...)
    return(invisible(x$trace))
  }
  if (!is.function(trans)) stop_arg("trans", "must be a function, such as exp")
  if (!is.numeric(shift) || length(shift) != 1 || !is.finite(shift)) stop_arg("shift", "must be a finite number")
  n1 <- length(term_panels(x$mean, 2, all.terms))
  n2 <- length(term_panels(x$scale, 2, all.terms))
  if (n1 + n2 == 0) return(plot(x, which = "trace", ...))
  sel <- select %||% seq_len(n1 + n2)
  if (!is.numeric(sel) || any(!sel %in% seq_len(n1 + n2)))
    stop_arg("select", "must index the panels (1..", n1 + n2, ": the mean's, then the log sd's)")
  check_count(pages, "pages", zero = TRUE)
  if (pages > 0) {
    per <- ceiling(length(sel) / pages)
    nc <- ceiling(sqrt(per))
    op <- graphics::par(mfrow = c(ceiling(per / nc), nc))
    on.exit(graphics::par(op))
  }
  out <- list()
  if (any(sel <= n1))
    out$mean <- plot(x$mean, select = sel[sel <= n1], residuals = residuals, all.terms = all.terms,
                     shift = shift, trans = trans, ...)
  if (any(sel > n1)) {
    s <- x$scale
    s$terms$gp <- lapply(s$terms$gp, function(g) { g$spec$label <- sub("(", ".1(", g$spec$label, fixed = TRUE); g })
    # (the fit's predictor is 2 g: halved, then shifted and transformed)
    panels <- plot(s, select = sel[sel > n1] - n1, all.terms = all.terms, trans = function(v) trans(v / 2 + shift), ...)
    out$log_sd <- lapply(panels, function(p) { p$fit <- p$fit / 2; p$se <- p$se / 2; p })
  }
  invisible(out)
}

#' @rdname gaulss
#' @export
coef.gpgam_ls <- function(object, ...) {
  c1 <- coef(object$mean)
  c2 <- coef(object$scale) / 2
  if (length(c2)) names(c2) <- paste0(names(c2), ".1")
  c(c1, c2)
}

#' @rdname gaulss
#' @export
vcov.gpgam_ls <- function(object, ...) {
  v1 <- vcov(object$mean)
  v2 <- vcov(object$scale) / 4
  nm <- names(coef(object))
  out <- matrix(0, length(nm), length(nm), dimnames = list(nm, nm))
  i1 <- seq_len(nrow(v1))
  out[i1, i1] <- v1
  i2 <- nrow(v1) + seq_len(nrow(v2))
  out[i2, i2] <- v2
  out
}

#' @rdname gaulss
#' @export
sigma.gpgam_ls <- function(object, ...) stats::napredict(object$na.action, object$fitted.values[, "sd"])

#' @rdname gaulss
#' @export
family.gpgam_ls <- function(object, ...) object$family

#' @rdname gaulss
#' @export
residuals.gpgam_ls <- function(object, type = c("deviance", "pearson", "response"), ...) {
  type <- match_arg(type)
  r <- object$y - object$fitted.values[, "mean"]
  if (type != "response") r <- r / object$fitted.values[, "sd"]
  stats::naresid(object$na.action, r)
}

#' @rdname gaulss
#' @details `deviance()` of a location-scale fit is
#'   \eqn{-2\sum_i w_i \log N(y_i; \hat\mu_i, \hat\sigma_i^2)}{-2 sum_i w_i log N(y_i; mu_i, sigma_i^2)}
#'   at the fitted means and sds (up to mgcv's saturated-model constant), and
#'   `df.residual()` the number of rows of non-zero weight minus the edf of
#'   both predictors.
#' @export
deviance.gpgam_ls <- function(object, ...) {
  -2 * sum(object$prior.weights * stats::dnorm(object$y, object$fitted.values[, "mean"],
                                               object$fitted.values[, "sd"], log = TRUE))
}

#' @rdname gaulss
#' @export
df.residual.gpgam_ls <- function(object, ...) {
  sum(object$prior.weights != 0) - ls_edf(object$mean) - ls_edf(object$scale)
}
ls_edf <- function(f) sum(vapply(f$params$gp, `[[`, 1, "edf")) + length(param_kept(f$terms))

#' @rdname gaulss
#' @param nsim,seed as [stats::simulate()]: draws of new responses at the
#'   fitting rows from the posterior predictive (a draw of both predictors,
#'   then the noise).
#' @export
simulate.gpgam_ls <- function(object, nsim = 1, seed = NULL, ...) {
  if (is.null(object$mean$model)) stop_arg("object", "was fitted with model = FALSE; simulate() needs the model frame")
  rng <- simulate_rng(seed)
  on.exit(rng$restore())
  Xf <- new_design(object$mean, NULL, stats::na.pass)
  Xs <- new_design(object$scale, NULL, stats::na.pass)
  f <- latent_draws(object$mean, Xf$X, nsim)
  f <- object$mean$scaling$y$center + object$mean$scaling$y$scale * f + Xf$offset
  eta <- latent_draws(object$scale, Xs$X, nsim) + object$scale$scaling$y$center
  n <- nrow(f)
  y <- f + exp(eta / 2) * matrix(stats::rnorm(n * nsim), n, nsim)
  out <- as.data.frame(y)
  names(out) <- paste0("sim_", seq_len(nsim))
  rownames(out) <- rownames(object$mean$model)
  out <- pad_excluded_rows(out, object$na.action)
  attr(out, "seed") <- rng$seed
  out
}

#' @rdname gaulss
#' @param formula. for `update()`: a list of two formulas updating the mean's
#'   and the log sd's formulas in turn (`NULL` or `. ~ .` keeps one), or one
#'   formula updating the mean's (as [stats::update.formula]).
#' @param evaluate for `update()`: refit (`TRUE`) or return the call.
#' @export
update.gpgam_ls <- function(object, formula., ..., evaluate = TRUE) {
  call <- stats::getCall(object)
  if (!missing(formula.)) {
    new <- if (inherits(formula., "formula")) list(formula.) else formula.
    if (!is.list(new) || length(new) > 2L ||
        !all(vapply(new, function(f) is.null(f) || inherits(f, "formula"), TRUE)))
      stop_arg("formula.", "must be a formula (for the mean) or a list of at most two formulas ",
               "(the mean's, then the log sd's)")
    old <- object$formula
    if (length(new) == 2L && !is.null(f2 <- new[[2L]]) && length(f2) == 3L) {
      if (!identical(f2[[2L]], quote(.)))
        stop_arg("formula.", "gives the log sd's formula a response; it must be one-sided (~ terms) or . ~ terms")
      new[[2L]] <- f2[-2L]  # . ~ terms: the one-sided ~ terms
    }
    for (i in seq_along(new)) if (!is.null(new[[i]])) old[[i]] <- stats::update.formula(old[[i]], new[[i]])
    call$formula <- old
  }
  extras <- match.call(expand.dots = FALSE)$...
  for (a in names(extras)) call[[a]] <- extras[[a]]
  if (evaluate) eval(call, parent.frame()) else call
}

#' @rdname gaulss
#' @export
anova.gpgam_ls <- function(object, ...) {
  others <- drop_test_arg(list(...), "location-scale fits",
                          "it compares their joint ELBOs, whose differences approximate log Bayes factors")
  if (length(others) == 0)
    stop("anova() of one location-scale (gaulss) fit is not available: summary(fit) tests each predictor's terms; ",
         "anova(fit1, fit2, ...) compares fits of the same data by their joint ELBOs", call. = FALSE)
  compare_fits(c(list(object), others), anova_labels(match.call()), "gpgam_ls")
}

#' @rdname gaulss
#' @param k unused.
#' @export
AIC.gpgam_ls <- function(object, ..., k = 2) refuse_ic_ls("AIC")

#' @rdname gaulss
#' @export
BIC.gpgam_ls <- function(object, ...) refuse_ic_ls("BIC")

refuse_ic_ls <- function(what) {
  stop(what, "() is not defined for scalegp fits: logLik() of a location-scale fit is its joint ELBO (a lower ",
       "bound on the log marginal likelihood), not a maximised log-likelihood; compare fits of the same data by ",
       "logLik(fit1) - logLik(fit2) or by held-out predictions", call. = FALSE)
}
