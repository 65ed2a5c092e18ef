# gpgam(): the front function; the pipeline model frame -> setup ->
# engine_fit() -> collect_fit() (setup.R, engine.R, fit.R).

#' Fit a Gaussian-process additive model
#'
#' `gpgam()` fits models of the form
#' \deqn{g(E[y]) = \beta_0 + z^\top\beta + f(x_1, \dots, x_d),\qquad f \sim GP(0, k)}{g(E[y]) = b0 + z'b + f(x1, ..., xd),   f ~ GP(0, k)}
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
#' Parametric columns aliased with earlier ones (those [lm()] gives `NA`)
#' leave the design with a warning naming them; as in mgcv, their
#' coefficients are 0 with variance 0, and `summary()` and `anova()` do not
#' test them.
#' The objective is the evidence lower bound (ELBO), reported by [logLik()].
#' A Gaussian fit can form its discretised sums on the workers of a parallel
#' cluster that hold the rows in shards (`gp_control(cluster = )`, see
#' [vi_options()]; identical results).
#'
#' `inference = "ep"` is expectation propagation for GP classification with a
#' probit likelihood (Hernandez-Lobato and Hernandez-Lobato 2016): the same
#' sparse model (FITC likelihood, inducing points) with one Gaussian site per
#' observation.  By default (batch EP) L-BFGS maximises the EP estimate of
#' the log marginal likelihood, which [logLik()] reports, over the
#' hyperparameters, with the sites refitted to their fixed point by parallel
#' sweeps at each step (damped only when the sweeps oscillate), so that its
#' gradient is exact and the fit ends at a stationary point;
#' `gp_control(optimizer = "adam")` runs the paper's "inner" updates instead
#' (one damped sweep, then one Adam step on the hyperparameters and inducing
#' inputs, per iteration).  With `batch_size` below the number
#' of rows the sites are refined one minibatch at a time (stochastic EP; with
#' `gp_control(sites = "tied")` one shared site, O(M^2) memory), and with
#' `gp_control(cluster = )` the data are held in shards on the workers of a
#' parallel cluster (distributed EP, identical results).  EP needs
#' `binomial(link = "probit")`, a 0/1, logical or two-level factor response
#' and unit weights.  Differences from the paper: hyperparameters move by
#' L-BFGS or Adam rather than the paper's sign-adaptive (batch) and ADADELTA
#' (minibatch) rules, and the inducing inputs stay where they start unless
#' `gp_control(learn_inducing = TRUE)`; sites keep their scalars in whitened
#' coordinates when the hyperparameters change; there is no learned latent noise term (a relative
#' jitter stabilises K_uu); a minibatch site is removed with the features of
#' its last refinement, recomputed from stored hyperparameters instead of the
#' paper's stored O(NM) vectors.
#'
#' **A check after the fit.** With `binomial()` (logit link) or
#' `poisson()` and an intercept, a fit at a stationary point of its exact
#' objective has fitted mean responses whose weighted mean equals that of
#' the response (the intercept's equation, as for [glm()]'s score
#' equations).  `gpgam()` warns when the two differ by more than 4 standard
#' errors: the fit is then far from such a point (an iteration limit, or the
#' stochastic bound of `inference = "qsgp"`).
#'
#' Inputs and (for the Gaussian and scaled t families) the response are
#' standardised internally; with a log link (poisson, Gamma, negative binomial) the
#' response is used as it is and the predictor is centred at the log of its
#' mean.  Every reported number is on the scale of the data.
#'
#' @param formula a formula such as `y ~ gp(x1, x2) + z + f`: `gp()` terms
#'   (and mgcv's `s()`, `te()`, `ti()` with `by =`, see [gp()]), parametric
#'   terms, `offset()` terms; `y ~ .` uses every other column of `data` as a
#'   parametric term.  With `family = mgcv::gaulss()`, a list of two formulas:
#'   the mean's and the log sd's (one-sided), see [gaulss].
#' @param data a data frame (or a list of variables).  Without it the
#'   variables are taken from the formula's environment, as in [lm()].
#' @param family a family object: `gaussian()`, `binomial(link = "probit")`,
#'   `binomial()` (logit), `poisson()`, `Gamma(link = "log")` or a negative
#'   binomial with log link, `mgcv::nb()` (theta estimated; `nb(theta = t)`
#'   gives it, `nb(theta = -t)` starts it at t) or
#'   `MASS::negative.binomial(theta)` or `mgcv::negbin(theta)` (theta given), or the scaled t
#'   `mgcv::scat()` (identity link), or the location-scale Gaussian
#'   `mgcv::gaulss()` with a list of two formulas ([gaulss]).  For binomial, `y` may be 0/1,
#'   logical, a two-level factor (the first level is failure, as in [glm()]), a
#'   proportion with `weights` giving the number of trials, or
#'   `cbind(successes, failures)`.  For Gamma, `y` must be positive: the
#'   density of mean \eqn{\mu = e^\eta}{mu = exp(eta)} and shape k (variance
#'   \eqn{\mu^2 / k}{mu^2 / k}), k estimated with the kernel hyperparameters
#'   and reported by `print()` and `summary()` as `shape`; the fit holds it
#'   in `fit$params$shape`, mgcv's scale `1 / shape` in `fit$scale`, and
#'   `sigma(fit)` is `sqrt(fit$scale)`, the coefficient of variation.  For
#'   the negative binomial, `y` must be non-negative integer counts: mean
#'   \eqn{\mu = e^\eta}{mu = exp(eta)}, variance
#'   \eqn{\mu + \mu^2 / \theta}{mu + mu^2 / theta}; the fitted or given theta is
#'   `fit$params$theta` (`fit$scale` is 1).  For the scaled t, `y` is numeric:
#'   location \eqn{\eta}{eta}, scale sigma and degrees of freedom df > min.df
#'   (`scat(min.df = 3)`), both estimated unless `scat(theta = c(df, sigma))`
#'   gives them (negative values start them, as in mgcv); `print()` and
#'   `summary()` report `scale` and `df`, the fit holds them in
#'   `fit$params$sigma`, `$df` and `$theta` (`sigma(fit)` is the scale,
#'   `fit$scale` is 1), and `gp_control(fixed = "sigma", sigma = )` holds the
#'   scale.  Its log density is not concave, so the posterior can have
#'   several modes; the fit finds one.  Gamma, the negative binomial and the
#'   scaled t run with `inference = "vi"` only (their expected
#'   log-likelihoods are in closed form for Gamma and by Gauss-Hermite or
#'   composite Gauss-Legendre quadrature for the others; their parameters
#'   are estimated as the Gaussian noise is; a negative binomial theta
#'   stops at \eqn{e^{10}}{exp(10)}, where `summary()` says that the counts
#'   are no more dispersed than Poisson).  Any other family (mgcv's
#'   `ocat()`, `tw()`, ...; `gaulss()` with one formula) is refused with the
#'   list of those supported.
#' @param inference inference engine: `"vi"` (sparse variational GP, any
#'   family), `"ep"` (expectation propagation, binary probit
#'   classification) or `"decoupled"` (decoupled variational GP of Cheng and
#'   Boots 2017: many basis functions for the posterior mean, the inducing
#'   points for its covariance; one `gp()` term plus parametric terms; see
#'   [decoupled_options()]; gaussian, binomial and poisson) or `"qsgp"`
#'   (quadruply stochastic GP of Evans and Nair 2018 on random Fourier
#'   features; gaussian, binomial and poisson; see [qsgp_options()]).
#' @param control a [gp_control()] object (or a list of its arguments).
#' @param weights optional prior weights (Gaussian: precision weights;
#'   binomial: number of trials; poisson and negative binomial: multiplies
#'   the log-likelihood; Gamma: multiplies the shape, as [glm()]'s weights
#'   divide the dispersion; scaled t: the scale of a row is
#'   `sigma / sqrt(weight)`).
#' @param subset optional subset of rows, as in [lm()].
#' @param offset an optional offset (link scale), as in [glm()]: a variable of
#'   `data` or an expression of them; `predict()` evaluates it in `newdata`.
#'   `offset()` terms in the formula are added to it.
#' @param na.action what to do with missing values (default
#'   `getOption("na.action")`, normally [na.omit()]).
#' @param model keep the model frame in the fit (`TRUE`, as [lm()] does).
#' @param ... arguments of mgcv's `gam()` and `bam()` without meaning here
#'   (`method`, `optimizer`, `select`, `gamma`, `sp`, `min.sp`, `knots`,
#'   `scale`, `nthreads`, `discrete`, `chunk.size`, `samfrac`, `gc.level`,
#'   `use.chol`) are ignored with a warning that says what gpgam() does
#'   instead; any other is an error.
#' @return An object of class `c("gpgam_<inference>", "gpgam", "scalegp")`
#'   (`"gpgam_vi"`, `"gpgam_ep"`, `"gpgam_decoupled"` or `"gpgam_qsgp"` first); see
#'   [summary.gpgam()], [predict.gpgam()] and [plot.gpgam()].  Its
#'   `converged` is `TRUE` when the fit ended at a stationary point
#'   ([gp_control()]'s `tol`); otherwise `stop` says why it ended, and for a
#'   fit over all rows per iteration `gpgam()` warns, as [glm()] does (a
#'   condition of class `"scalegp_convergence_warning"`;
#'   `options(scalegp.warn_convergence = FALSE)` turns it off, for
#'   iterations capped on purpose).  A fit on minibatches ends by its
#'   stopping rule on noisy estimates: [print()] and [summary()] say whether
#'   it is at a stationary point.  `inference = "qsgp"` runs its iterations
#'   out, with no stationary-point test ([qsgp_options()]).
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
#'
#' # a positive skewed response: Gamma with log link, shape estimated
#' d$pos <- rgamma(300, shape = 4, rate = 4 / exp(1 + sin(2 * d$x)))
#' fg <- gpgam(pos ~ gp(x), data = d, family = Gamma(link = "log"),
#'             control = gp_control(inducing = 15))
#' fg                           # reports the shape and mgcv's scale 1 / shape
#' c(shape = fg$params$shape, scale = fg$scale)
#' predict(fg, data.frame(x = c(-1, 0, 1)), type = "response")   # exp(eta + se^2 / 2)
#'
#' # overdispersed counts: negative binomial, theta estimated (mgcv::nb()) or
#' # given (MASS::negative.binomial(theta))
#' d$cnt <- rnbinom(300, size = 2, mu = exp(1 + sin(2 * d$x)))
#' if (requireNamespace("mgcv", quietly = TRUE)) {
#'   fnb <- gpgam(cnt ~ gp(x), data = d, family = mgcv::nb(), control = gp_control(inducing = 15))
#'   fnb$params$theta
#'
#'   # heavy-tailed noise: the scaled t, scale and df estimated
#'   d$yt <- sin(2 * d$x) + 0.2 * rt(300, df = 3)
#'   ft <- gpgam(yt ~ gp(x), data = d, family = mgcv::scat(), control = gp_control(inducing = 15))
#'   ft$params$theta    # c(df, sigma), as mgcv's scat()
#' }
#' @export
gpgam <- function(formula, data, family = gaussian(), inference = "vi", control = gp_control(),
                  weights, subset, na.action, offset, model = TRUE, ...) {
  cl <- match.call()
  check_mgcv_fit_args(...length(), ...names())
  tune_allocator()
  if (!missing(data)) data <- eval_data_arg(data)
  if ((is.list(formula) && !inherits(formula, "formula")) || is_gaulss(family)) {  # ?gaulss
    if (!is_gaulss(family))
      stop_arg("formula", "is a list of formulas, which needs family = mgcv::gaulss() (a mean and a log-sd predictor)")
    if (!is.list(formula) || inherits(formula, "formula"))
      stop_arg("formula", "for family = gaulss() must be a list of two formulas: list(y ~ <mean terms>, ~ <log-sd terms>)")
    if (is.function(family)) family <- family() else if (is.character(family)) family <- mgcv_gaulss()
    return(gaulss_gpgam(cl, parent.frame(), formula, family, inference, control, model))
  }
  engine <- get_engine(inference)
  fam <- likelihood_name(family)
  check_engine_family(engine, fam)
  parsed <- parse_gpgam_formula(formula, if (!missing(data) && is.data.frame(data)) data)
  if (engine$name != "vi" && any(vapply(parsed$specs, function(sp) identical(sp$basis, "hilbert"), TRUE)))
    stop_arg("inference", "= \"", engine$name, "\" does not support gp(basis = \"hilbert\") yet; use inference = \"vi\"")
  mf <- gp_model_frame(cl, parent.frame(), parsed$full, if (!missing(data)) list(data))
  control <- resolve_control(control, nrow(mf), engine, fam$lik)
  if (engine$basis != "inducing points" && (!is.null(control$inducing) ||
      any(vapply(parsed$specs, function(sp) !is.null(sp$k) || !is.null(sp$inducing), TRUE))))
    warning("inference = \"", engine$name, "\" has no inducing points (its basis: ", engine$basis, "): gp(k = ), ",
            "gp(inducing = ) and gp_control(inducing = ) set at most those of a pilot fit (see ?",
            engine$name, "_options)", call. = FALSE)
  if (!has_sigma(fam$lik) && (!is.null(control$sigma) || "sigma" %in% control$fixed))
    warning("'control': gp_control(sigma = , fixed = \"sigma\") set the residual sd of a Gaussian model; ",
            "family ", fam$family$family, " has none, so they are ignored",
            switch(fam$lik, gamma = " (its shape is estimated)",
                   negbin = " (to fix theta, give it to the family: mgcv::nb(theta = ) or MASS::negative.binomial(theta))", ""),
            call. = FALSE)
  setup <- gp_setup(parsed, mf, fam, control)
  t0 <- proc.time()[["elapsed"]]
  fitted <- engine_fit_adapted(engine, setup, control)  # gp(basis = "hilbert"): ?gp
  res <- fitted$res
  setup <- fitted$setup
  refits <- fitted$refits
  elapsed <- proc.time()[["elapsed"]] - t0
  fit <- collect_fit(setup, res, control, engine)
  fit$call <- cl
  fit$formula <- formula
  fit$timing <- c(fit = elapsed, res$seconds, per_iteration = res$seconds[["iterations"]] / max(1, res$iterations))
  fit$na.action <- attr(mf, "na.action")
  fit$offset_expr <- cl$offset  # evaluated in newdata by predict()
  fit$frame_terms <- attr(mf, "terms")  # (terms(fit), with or without the model frame)
  if (model) fit$model <- mf
  if (any(vapply(fit$terms$gp, function(g) identical(g$type, "hilbert"), TRUE))) fit$hilbert_refits <- refits
  hilbert_check(fit)
  calibration_check(fit)
  separation_check(fit)
  warning_not_converged(fit)
  fit
}

# Gamma, the negative binomial and the scaled t (likelihoods with their own
# parameters other than the Gaussian noise) run with inference = "vi" only:
# the other engines refuse them, naming the families they fit.
check_engine_family <- function(engine, fam) {
  if (!fam$lik %in% c("gamma", "negbin", "scat") || engine$name == "vi") return(invisible())
  supports <- switch(engine$name, ep = "binomial(link = \"probit\")",
                     decoupled = , qsgp = "gaussian(), binomial(link = \"logit\" or \"probit\") and poisson()", NULL)
  stop_arg("family", switch(fam$lik, gamma = "Gamma(link = \"log\")", negbin = "the negative binomial",
                            scat = "the scaled t (scat())"),
           " is not supported by inference = \"", engine$name, "\"",
           if (!is.null(supports)) paste0(", which fits ", supports),
           "; use inference = \"vi\" (the default)")
}

# mgcv's gam() and bam() arguments without meaning for gpgam(), with what
# gpgam() does instead: ignored with a warning (check_mgcv_fit_args()).
mgcv_fit_ignored <- local({
  est <- paste("the kernel hyperparameters (a GP's smoothness) are estimated by maximising the objective",
               "(the ELBO, or the EP log evidence) with weak priors (gp_control(priors = ))")
  bam <- "a setting of mgcv's fitting algorithm without counterpart here"
  c(method = est, optimizer = est, min.sp = est,
    select = "each gp() term's variance is estimated and can shrink the term towards zero",
    gamma = paste("the smoothness is estimated, not inflated by a factor;", est),
    sp = "give a term's hyperparameters with gp(lengthscale = , variance = ) and hold them with gp_control(fixed = \"kernel\")",
    knots = "gp() places its inducing points itself (their number: gp(k = ) or gp_control(inducing = ))",
    scale = "the noise sd is estimated; give it with gp_control(sigma = , fixed = \"sigma\")",
    nthreads = "use gp_control(threads = )",
    discrete = "covariates are discretised by default (gp_control(discrete = ), see ?vi_options)",
    chunk.size = bam, samfrac = bam, gc.level = bam, use.chol = bam)
})

# The number and names of gpgam()'s `...`: mgcv's arguments of mgcv_fit_ignored draw a
# warning each; an unnamed or other argument is an error, as R's own
# "unused argument" error.
check_mgcv_fit_args <- function(n, nms) {
  if (n == 0) return(invisible())
  if (is.null(nms) || any(nms == "")) stop("gpgam(): unused unnamed argument(s); all arguments after 'model' must be named", call. = FALSE)
  bad <- setdiff(nms, names(mgcv_fit_ignored))
  if (length(bad))
    stop(sprintf("gpgam(): unused argument(s) %s (see ?gpgam; mgcv's %s are ignored with a warning)",
                 paste0("'", bad, "'", collapse = ", "), paste(names(mgcv_fit_ignored), collapse = ", ")),
         call. = FALSE)
  for (a in nms) warning(sprintf("gpgam(): mgcv's '%s' is ignored: %s", a, mgcv_fit_ignored[[a]]), call. = FALSE)
  invisible()
}
