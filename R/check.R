# Diagnostics in the manner of mgcv's gam.check(): residual plots, a
# convergence report and a check of each gp() term's inducing points; and
# residuals() and simulate() for every fit.

#' Check a gpgam fit
#'
#' In the manner of `mgcv::gam.check()`: four residual panels (a normal QQ
#' plot of the deviance residuals, residuals against the linear predictor, a
#' histogram of the residuals, the response against the fitted values), a
#' report on how the fit ended, and a check of each `gp()` term's inducing
#' points (or, for an engine with another basis, its basis: the random
#' features of `inference = "qsgp"`).
#'
#' The convergence report gives the iterations, why the fit stopped, the
#' largest entry of the gradient of its objective (and whose it is) against
#' the tolerance `tol * n` of [gp_control()] (a stationary point when below),
#' and the last change of the posterior mean of the weights (the whitened
#' inducing variables, or a Hilbert term's basis weights).
#'
#' The inducing-point check gives, per term, the number of inducing points
#' M, the edf and edf / M (near 1 the posterior uses its whole basis: more
#' inducing points may be needed), and a k-index: the mean squared difference
#' of the deviance residuals of rows that are nearest neighbours in the term's
#' inputs (standardised; at most 2000 rows), over twice their variance.  Well
#' below 1 it signals residual structure along the inputs; its p-value is the
#' share of `rep` random reorderings of the residuals with an index as low.
#' Advice is printed where a term looks short of inducing points (for a
#' Hilbert term, `M` is its number of basis functions).
#'
#' For terms with `basis = "hilbert"` (see [gp()]) a second table gives, per
#' input, the sines, the box factor and the factor the fitted lengthscale
#' needs, the lengthscale and the shortest the basis represents (data
#' scale), and a status: `"short"` (a lengthscale near the shortest: use a
#' larger `k`), `"long"` (the box is too narrow for it: the curve is pulled
#' towards zero at the box's edges), `"widest box"` (the same on a box of
#' 8 half-ranges of the data, the widest the fit gives, on which a flat or
#' linear direction is still represented over the data: no warning),
#' `"fixed"` (kernel not learned) or `"ok"`.
#'
#' @param fit a fit made by [gpgam()] (with its model frame).
#' @param rep number of permutations for the k-index p-values.
#' @param plot draw the four panels.
#' @param ... passed to the plotting functions.
#' @return Invisibly, a list: `convergence` (a one-row data frame),
#'   `terms` (one row per `gp()` term: `M`, `edf`, `edf/M`, `k-index`,
#'   `p-value`) and `hilbert` (the Hilbert bases' table, one row per input;
#'   `NULL` without Hilbert terms).
#' @examples
#' set.seed(2)
#' d <- data.frame(x = runif(300))
#' d$y <- sin(12 * d$x) + rnorm(300, sd = 0.2)
#' fit <- gpgam(y ~ gp(x, k = 6), data = d)
#' gp_check(fit, rep = 100)
#' @export
gp_check <- function(fit, rep = 200, plot = TRUE, ...) {
  if (inherits(fit, "gpgam_ls"))
    stop_arg("fit", "is a location-scale (gaulss) fit; gp_check() serves single-predictor gpgam() fits")
  if (!inherits(fit, "gpgam")) stop_arg("fit", "must be a gpgam fit")
  if (is.null(fit$model)) stop_arg("fit", "was fitted with model = FALSE; gp_check() needs the model frame")
  check_count(rep, "rep")
  r <- residuals_at(fit, "deviance")
  eta <- fit$linear.predictors
  if (isTRUE(plot)) {
    op <- graphics::par(mfrow = c(2, 2))
    on.exit(graphics::par(op))
    stats::qqnorm(r, main = "Normal QQ plot of deviance residuals", ...)
    stats::qqline(r, col = "grey40")
    plot(eta, r, xlab = "linear predictor", ylab = "deviance residuals", main = "Residuals vs linear predictor",
         pch = 20, col = grDevices::adjustcolor("black", 0.5), ...)
    graphics::abline(h = 0, lty = 3)
    graphics::hist(r, breaks = "FD", xlab = "deviance residuals", main = "Histogram of residuals", ...)
    plot(fit$fitted.values, fit$y, xlab = "fitted values", ylab = "response", main = "Response vs fitted values",
         pch = 20, col = grDevices::adjustcolor("black", 0.5), ...)
    graphics::abline(0, 1, lty = 3)
  }
  g <- fit$gradient
  j <- if (length(g)) which.max(abs(g)) else NA
  conv <- data.frame(converged = isTRUE(fit$converged), stop = fit$stop %||% NA_character_,
                     iterations = fit$iterations, largest_gradient = if (length(g)) abs(g[j]) else 0,
                     parameter = if (length(g)) names(g)[j] else NA_character_,
                     tolerance = fit$control$tol * fit$n, q_change = fit$q_change %||% NA_real_,
                     failures = fit$failures %||% 0L, stringsAsFactors = FALSE)
  tab <- inducing_check(fit, r, rep)
  cat("\n", convergence_line(fit), "\n", sep = "")
  cat(sprintf("%d iterations; last change of the posterior mean of the weights %s; %d failed step(s)\n",
              fit$iterations, format(fit$q_change %||% NA, digits = 2), fit$failures %||% 0L))
  if (nrow(tab)) {
    type <- vapply(fit$terms$gp, function(g) g$type %||% "", "")
    hs <- stats::setNames(type == "hilbert", rownames(tab))
    basis <- fit$engine$basis %||% "inducing points"  # (the engine's: "random features" for qsgp)
    what <- if (all(hs)) c("Basis functions", "a larger basis") else if (any(hs)) c("Bases (inducing points or Hilbert sines)", "a larger basis")
            else c(paste0(toupper(substr(basis, 1, 1)), substring(basis, 2)), paste("more", basis))
    cat("\n", what[1], " of the gp() terms (k-index well below 1 with a small p-value, or edf/M near 1,\n",
        "suggest ", what[2], "):\n", sep = "")
    print(format(tab, digits = 3))
    # (a factor's random effect has one effect per level, exact: no advice)
    advice <- rownames(tab)[type != "factor" & ((tab$`edf/M` > 0.8) | (tab$`k-index` < 0.9 & tab$`p-value` < 0.05))]
    for (a in advice)
      cat(if (hs[[a]]) sprintf("Advice: %s may need a larger Hilbert basis (%d functions): try k = %d per input.\n", a,
                               tab[a, "M"], 2L * fit$terms$gp[[which(rownames(tab) == a)[1]]]$hilbert$m[1])
          else if (basis != "inducing points")
            sprintf("Advice: %s may need more %s (it has %d): try gp_control(%s = %d).\n", a, basis, tab[a, "M"],
                    fit$engine$basis_column, 2L * tab[a, "M"])
          else sprintf("Advice: %s may need more inducing points (it has %d): try k = %d.\n", a, tab[a, "M"],
                       2L * tab[a, "M"]))
  }
  hs_tab <- hilbert_table(fit)
  if (!is.null(hs_tab)) {
    cat("\nHilbert bases, per input (status short: a lengthscale near the shortest the sines represent, use a\n",
        "larger k; long: the box is narrower than the lengthscale needs, the curve is pulled to zero at its edges):\n",
        sep = "")
    print(format(hs_tab, digits = 3), row.names = FALSE)
  }
  cat("\n")
  invisible(list(convergence = conv, terms = tab, hilbert = hs_tab))
}

# Per gp() term: M, edf, edf / M, and the nearest-neighbour k-index of the
# residuals r along the term's inputs with its permutation p-value.
inducing_check <- function(fit, r, rep) {
  gps <- fit$terms$gp
  if (length(gps) == 0) return(data.frame())
  rows <- if (length(r) > 2000) unique(round(seq(1, length(r), length.out = 2000))) else seq_along(r)
  mf <- fit$model[rows, , drop = FALSE]
  rr <- r[rows]
  tab <- t(vapply(seq_along(gps), function(i) {
    g <- gps[[i]]
    p <- fit$params$gp[[i]]
    X <- if (g$type == "factor") matrix(as.numeric(factor(mf[[g$spec$vars]], levels = g$levels))) else
      standardise(gp_inputs(mf, g$spec), g$scaling)
    nn <- nearest_neighbours(X)
    kidx <- function(res) mean((res - res[nn])^2) / (2 * stats::var(res))
    k0 <- kidx(rr)
    perm <- vapply(seq_len(rep), function(b) kidx(sample(rr)), 0)
    c(p$basis, p$edf, p$edf / p$basis, k0, mean(perm <= k0))
  }, numeric(5)))
  tab <- as.data.frame(tab)
  names(tab) <- c("M", "edf", "edf/M", "k-index", "p-value")
  rownames(tab) <- gp_labels(fit$terms)
  tab$M <- as.integer(tab$M)
  tab
}

# Index of each row's nearest other row (Euclidean; ties broken by order).
nearest_neighbours <- function(X) {
  X <- as.matrix(X)
  if (ncol(X) == 1) {
    o <- order(X[, 1])
    nb <- integer(nrow(X))
    nb[o] <- o[c(2L, seq_len(length(o) - 1L))]  # the previous row in sorted order (the first: the second)
    return(nb)
  }
  D <- as.matrix(stats::dist(X))
  diag(D) <- Inf
  max.col(-D, ties.method = "first")
}

# Residuals of the rows used for fitting (see residuals.scalegp()).
residuals_at <- function(object, type) {
  mu <- object$fitted.values
  y <- object$y
  w <- object$prior.weights
  switch(type,
         response = y - mu,
         pearson = {
           # (y - mu) sqrt(w / V(mu)) with the family's variance function,
           # as glm(): no dispersion (Gaussian sigma^2, Gamma 1 / shape)
           # divides it; 0 at a row of weight 0
           v <- switch(object$likelihood, gaussian = , scat = rep(1, length(mu)), poisson = mu, gamma = mu^2,
                       negbin = mu + mu^2 / object$params$theta, mu * (1 - mu))
           (y - mu) * sqrt(w / v)
         },
         deviance = {
           d <- family(object)$dev.resids(y, mu, w)
           sign(y - mu) * sqrt(pmax(d, 0))
         },
         working = {
           # glm's IRLS working residual z - eta at the predictor eta (the
           # posterior mean), with its own mean g^{-1}(eta): (y - g^{-1}(eta)) / mu'(eta)
           fam <- family(object)
           eta <- object$linear.predictors
           (y - fam$linkinv(eta)) / fam$mu.eta(eta)
         })
}

#' @rdname gpgam-methods
#' @details `residuals()` types, as for [glm()]: `"deviance"` (the default:
#'   signed square roots of the deviance contributions; `y - fitted` for a
#'   Gaussian model),
#'   `"pearson"` (\eqn{(y - \mu) \sqrt{w / V(\mu)}}{(y - mu) sqrt(w / V(mu))} with the
#'   family's variance function \eqn{V}{V}, not divided by a dispersion such
#'   as the Gaussian \eqn{\sigma^2}{sigma^2}, as for glm() and mgcv),
#'   `"working"` (\eqn{(y - g^{-1}(\eta)) / \mu'(\eta)}{(y - g^-1(eta)) / mu'(eta)}
#'   at the posterior mean \eqn{\eta}{eta} of the linear predictor, with
#'   \eqn{g}{g} the link: glm's working residual at \eqn{\eta}{eta}, which
#'   `plot(residuals = TRUE)` adds to a term for its partial residuals) and
#'   `"response"` (\eqn{y - \mu}{y - mu}), with \eqn{\mu}{mu} (in the other
#'   types too) the posterior mean response, which for a nonlinear link
#'   differs from \eqn{g^{-1}(\eta)}{g^-1(eta)}.
#' @export
residuals.scalegp <- function(object, type = c("deviance", "pearson", "working", "response"), ...) {
  type <- match_arg(type)
  check_kept_fitted(object)
  stats::naresid(object$na.action, residuals_at(object, type))
}

#' Simulate from the posterior predictive distribution of a gpgam fit
#'
#' Draws of the response at the rows used for fitting: the latent functions
#' and coefficients from their joint posterior (the Gaussian posterior of the
#' inducing variables, plus the independent prior variance the inducing
#' points leave at each row), then the response from the family (Gaussian
#' noise of sd `sigma / sqrt(weight)`; binomial trials from the weights;
#' Poisson counts; Gamma responses of mean `exp(eta)` and shape `shape *
#' weight`; negative binomial counts of mean `exp(eta)` and the fitted
#' theta, weights not used; scaled t of scale `sigma / sqrt(weight)` and the
#' fitted df).
#'
#' @param object a fit made by [gpgam()] (with its model frame).
#' @param nsim number of draws.
#' @param seed an optional seed for [set.seed()], as in [simulate()]: R's
#'   random number stream is put back as it was afterwards.
#' @param ... unused.
#' @return A data frame with `nsim` columns `sim_1`, ... and one row per
#'   row used for fitting (binomial: proportions of the trials; for a
#'   `cbind(successes, failures)` response each column is that two-column
#'   matrix of counts, and for a factor response a factor of its levels, as
#'   [glm()]'s), with attribute `"seed"` (as [stats::simulate()]: `seed`
#'   with the [RNGkind()], or `.Random.seed` as it was when `seed` is
#'   `NULL`).
#' @examples
#' set.seed(1)
#' d <- data.frame(x = runif(200)); d$y <- rpois(200, exp(1 + sin(4 * d$x)))
#' fit <- gpgam(y ~ gp(x), data = d, family = poisson(), control = gp_control(inducing = 10))
#' s <- simulate(fit, nsim = 100, seed = 2)
#' c(observed = mean(d$y), simulated = mean(as.matrix(s)))
#' @export
simulate.scalegp <- function(object, nsim = 1, seed = NULL, ...) {
  check_count(nsim, "nsim")
  if (is.null(object$model)) stop_arg("object", "was fitted with model = FALSE; simulate() needs the model frame")
  rng <- simulate_rng(seed)
  on.exit(rng$restore())
  nd <- new_design(object, NULL, stats::na.pass, mf = object$model)
  ysc <- object$scaling$y
  eta <- latent_draws(object, nd$X, nsim)
  n <- nrow(nd$X)
  eta <- unscale_mean(ysc, eta + nd$offset / ysc$scale)
  w <- object$prior.weights
  yr <- stats::model.response(object$model)
  sims <- switch(object$likelihood,
    gaussian = eta + sigma(object) / sqrt(pmax(w, 1e-300)) * matrix(stats::rnorm(n * nsim), n),
    poisson = matrix(stats::rpois(n * nsim, exp(pmin(eta, 700))), n),
    gamma = {  # shape k w (precision weights), mean exp(eta)
      a <- object$params$shape * w
      matrix(stats::rgamma(n * nsim, shape = a, rate = a / exp(pmin(eta, 700))), n)
    },
    negbin = matrix(stats::rnbinom(n * nsim, size = object$params$theta, mu = exp(pmin(eta, 700))), n),
    scat = eta + sigma(object) / sqrt(pmax(w, 1e-300)) * matrix(stats::rt(n * nsim, object$params$df), n),
    {
      p <- family(object)$linkinv(eta)
      # (trials from whole weights; one trial for a factor response; as glm's)
      size <- if (!is.factor(yr) && all(abs(w - round(w)) < 1e-8) && all(w >= 1)) round(w)
              else rep(1, n)
      matrix(stats::rbinom(n * nsim, size, p), n) / size
    })
  out <- as.data.frame(sims)
  names(out) <- paste0("sim_", seq_len(nsim))
  rownames(out) <- rownames(object$model)
  if (object$likelihood %in% c("logit", "probit") && is.matrix(yr) && ncol(yr) == 2) {
    # (a cbind(successes, failures) response: each draw as that matrix, as glm's simulate())
    size <- rowSums(yr)
    for (j in seq_len(nsim)) {
      k <- ifelse(size > 0, round(out[[j]] * size), 0)
      out[[j]] <- cbind(k, size - k, deparse.level = 0)
      dimnames(out[[j]]) <- list(rownames(object$model), colnames(yr))
    }
  } else if (object$likelihood %in% c("logit", "probit") && is.factor(yr)) {
    # (a factor response: each draw a factor of its levels, as glm's simulate())
    for (j in seq_len(nsim)) out[[j]] <- factor(out[[j]], levels = 0:1, labels = levels(yr))
  }
  out <- pad_excluded_rows(out, object$na.action)
  attr(out, "seed") <- rng$seed
  out
}

# R's generator for simulate(), as stats' simulate.lm() sets it: with `seed`,
# seeded by set.seed(seed), the "seed" attribute that seed with RNGkind(), and
# restore() puts back the stream as it was (call it on exit); without, the
# attribute is .Random.seed as it is now (drawn first in a new session) and
# restore() does nothing.
simulate_rng <- function(seed) {
  if (!exists(".Random.seed", envir = globalenv(), inherits = FALSE)) stats::runif(1)
  old <- get(".Random.seed", envir = globalenv(), inherits = FALSE)
  if (is.null(seed)) return(list(seed = old, restore = function() invisible()))
  set.seed(seed)
  list(seed = structure(seed, kind = as.list(RNGkind())),
       restore = function() assign(".Random.seed", old, envir = globalenv()))
}

# A data frame of draws at the fitting rows, with the rows na.action =
# na.exclude dropped put back as NA (as simulate.lm() and fitted() give
# them); other na.actions: unchanged.
pad_excluded_rows <- function(out, omit) {
  if (!inherits(omit, "exclude") || !length(omit)) return(out)
  full <- nrow(out) + length(omit)
  idx <- rep(NA_integer_, full)
  idx[-omit] <- seq_len(nrow(out))
  rn <- character(full)
  rn[-omit] <- rownames(out)
  rn[omit] <- names(omit) %||% as.character(omit)
  res <- out[idx, , drop = FALSE]
  for (j in seq_along(res)) if (is.matrix(res[[j]])) rownames(res[[j]]) <- rn
  rownames(res) <- rn
  res
}

# After a binomial fit, the sign of classes separated by a parametric column:
# fitted probabilities numerically 0 or 1 at the posterior mean of the linear
# predictor (glm()'s test and warning), and a column whose coefficient moves
# the predictor by more than `limit` logits (limit / 1.7 probits) per unit of
# the column's spread (its sd, or without an intercept its root mean square)
# yet lies within 10 posterior sds of 0.  Along such a column the likelihood
# keeps rising, and the coefficient's vague N(0, 100^2) prior sets its value:
# large and poorly determined (-64 with sd 16 for setosa against iris's Petal.Length),
# where a large effect that the data do determine lies many sds from 0.  A
# warning names the columns.  Called by gpgam().
separation_check <- function(fit, limit = 10) {
  if (!fit$likelihood %in% c("logit", "probit") || is.null(fit$terms$param)) return(invisible())
  eps <- 10 * .Machine$double.eps
  mu <- family(fit)$linkinv(fit$linear.predictors)
  if (!any(mu < eps | mu > 1 - eps, na.rm = TRUE)) return(invisible())
  pp <- param_posterior(fit)
  b <- pp$coef
  se <- sqrt(pmax(diag(pp$vcov), 0))
  names(se) <- names(b)
  sc <- fit$terms$param_scaling$scale
  names(sc) <- rownames(fit$terms$param_scaling$A)
  cols <- setdiff(intersect(names(b), names(sc)), "(Intercept)")
  lim <- if (fit$likelihood == "probit") limit / 1.7 else limit
  big <- cols[is.finite(b[cols]) & abs(b[cols] * sc[cols]) > lim & abs(b[cols]) < 10 * se[cols]]
  if (length(big))
    warning("fitted probabilities numerically 0 or 1 occurred (as glm() warns), and the classes look separated by ",
            paste0("'", big, "'", collapse = ", "), ": ",
            if (length(big) > 1) "their coefficients are" else "its coefficient is",
            " large and poorly determined, set by the coefficients' vague prior rather than by the data",
            call. = FALSE)
  invisible(big)
}

# After a fit with a canonical link (binomial logit, Poisson log) and an
# intercept: at a stationary point of the exact objective the intercept's
# equation makes the weighted mean of the fitted mean responses equal that
# of y (sum w (y - mu) = 0, up to the intercept's weak prior), as the score
# equations do for glm().  A large standardised gap
# z = sum w (y - mu) / sqrt(sum w V(mu)) means the fit is far from such a
# point (an iteration limit, or inference = "qsgp"'s stochastic bound,
# which pulls Poisson rates down): a warning says so.  Called by gpgam().
calibration_check <- function(fit, limit = 4) {
  canonical <- fit$likelihood %in% c("logit", "poisson")
  if (!canonical || !isTRUE(fit$intercept) || is.null(fit$fitted.values) || !is.numeric(fit$y)) return(invisible(NA))
  w <- if (length(fit$prior.weights) == length(fit$y)) fit$prior.weights else rep(1, length(fit$y))
  mu <- fit$fitted.values
  z <- sum(w * (fit$y - mu)) / sqrt(max(sum(w * family(fit)$variance(mu)), .Machine$double.xmin))
  if (is.finite(z) && abs(z) > limit)
    warning(sprintf(paste0("the fitted mean %s (%.4g) is %s the data's (%.4g; standardised gap %.1f): the fit is not at ",
                           "a stationary point of its exact objective%s; its estimates and bands are not reliable"),
                    if (fit$likelihood == "poisson") "rate" else "probability", sum(w * mu) / sum(w),
                    if (z > 0) "below" else "above", sum(w * fit$y) / sum(w), z,
                    if (inherits(fit, "gpgam_qsgp")) " (inference = \"qsgp\" maximises a stochastic bound whose gap biases it; inference = \"vi\" fits this model exactly)"
                    else " (see summary(fit) for its convergence)"),
            call. = FALSE)
  invisible(z)
}
