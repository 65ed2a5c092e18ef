# The intervals of predict(interval = ): posterior intervals of the mean
# ("confidence") and predictive intervals of a new observation
# ("prediction"), for every family, from the latent predictor's posterior
# N(eta, se^2) at each row (data scale).
#
# Confidence: the equal-tailed posterior interval of the predictor,
# eta +/- z se, and on the response scale its image under the inverse link
# (monotone, so these are the quantiles of the posterior of the mean
# response).  Prediction: the quantiles of the posterior predictive
# distribution of y at a row of weight 1, p(y) = E_f[p(y | f)]: in closed
# form for the Gaussian (eta +/- z sqrt(se^2 + sigma^2)); for the scaled t,
# Gamma, Poisson and negative binomial by solving E_f[P(Y <= y | f)] = p
# with the expectation by Gauss-Hermite quadrature (predictive_quantile()).

interval_columns <- function(object, type, interval, level, fit, eta, se) {
  lo_p <- (1 - level) / 2
  z <- stats::qnorm(1 - lo_p)
  lik <- object$likelihood
  if (interval == "confidence") {
    lwr <- eta - z * se
    upr <- eta + z * se
    if (type == "response") {
      inv <- family(object)$linkinv
      lwr <- inv(lwr)
      upr <- inv(upr)
    }
  } else if (lik == "gaussian") {
    half <- z * sqrt(se^2 + sigma(object)^2)
    lwr <- eta - half
    upr <- eta + half
  } else {
    lwr <- predictive_quantile(object, eta, se, lo_p)
    upr <- predictive_quantile(object, eta, se, 1 - lo_p)
  }
  cbind(fit = fit, lwr = lwr, upr = upr)
}

# Whether predict(interval = ) can give this interval, else the reason.
interval_refusal <- function(object, type, interval) {
  if (type %in% c("terms", "lpmatrix")) return("is for type = \"link\" or \"response\"")
  if (interval != "prediction") return(NULL)
  lik <- object$likelihood
  if (lik %in% c("probit", "logit"))
    return(paste0("= \"prediction\" is not given for ", object$family$family,
                  " (a new response is a proportion of whole trials, a discrete value); ",
                  "use interval = \"confidence\" for the probability, or simulate()"))
  if (type == "link" && link_name(object) != "identity")
    return("= \"prediction\" is on the scale of the response: use type = \"response\"")
  NULL
}

# The p-quantile of the posterior predictive distribution of a new
# observation (weight 1) at each row, for the scaled t, Gamma, Poisson and
# negative binomial: the root in y of F(y) = sum_k w_k P(Y <= y | f_k) - p
# over a 20-node Gauss-Hermite rule f_k = eta + sqrt(2) se t_k.  P(Y <= y | f)
# falls as f grows, so the conditional quantiles at eta -/+ 10 se (beyond
# every node) bracket the root; bisection then runs to 1e-8 of the bracket
# (continuous families) or to the smallest count with F >= p (counts).
# Rows with a missing eta or se give NA.
predictive_quantile <- function(object, eta, se, p) {
  out <- rep(NA_real_, length(eta))
  ok <- is.finite(eta) & is.finite(se)
  if (!any(ok)) return(out)
  eta <- eta[ok]
  se <- pmax(se[ok], 0)
  rule <- gauss_hermite(20)
  nodes <- outer(se, sqrt(2) * rule$t) + eta  # rows x nodes
  wts <- rule$w / sqrt(pi)
  pr <- object$params
  lik <- object$likelihood
  cdf <- switch(lik,
    scat = function(y, f) stats::pt((y - f) / pr$sigma, pr$df),
    gamma = function(y, f) stats::pgamma(y, shape = pr$shape, rate = pr$shape / exp(pmin(f, 700))),
    poisson = function(y, f) stats::ppois(y, exp(pmin(f, 700))),
    negbin = function(y, f) stats::pnbinom(y, size = pr$theta, mu = exp(pmin(f, 700))))
  qcond <- switch(lik,
    scat = function(f) f + pr$sigma * stats::qt(p, pr$df),
    gamma = function(f) stats::qgamma(p, shape = pr$shape, rate = pr$shape / exp(pmin(f, 700))),
    poisson = function(f) stats::qpois(p, exp(pmin(f, 700))),
    negbin = function(f) stats::qnbinom(p, size = pr$theta, mu = exp(pmin(f, 700))))
  mix <- function(y) drop(matrix(cdf(rep(y, ncol(nodes)), nodes), nrow(nodes)) %*% wts)
  lo <- qcond(eta - 10 * se)
  hi <- qcond(eta + 10 * se)
  if (lik %in% c("poisson", "negbin")) {  # smallest count with F >= p: F(lo - 1) < p <= F(hi)
    lo <- lo - 1
    while (any(open <- hi - lo > 1)) {
      mid <- floor((lo + hi) / 2)
      above <- open & mix(mid) >= p
      hi[above] <- mid[above]
      below <- open & !above
      lo[below] <- mid[below]
    }
    out[ok] <- hi
    return(out)
  }
  width <- hi - lo
  for (it in seq_len(60)) {
    if (all(hi - lo <= 1e-8 * width)) break
    mid <- (lo + hi) / 2
    above <- mix(mid) >= p
    hi[above] <- mid[above]
    lo[!above] <- mid[!above]
  }
  out[ok] <- (lo + hi) / 2
  out
}

# Gauss-Hermite rule for the weight exp(-t^2) (Golub-Welsch): nodes t, weights w.
gauss_hermite <- function(n) {
  J <- matrix(0, n, n)
  k <- seq_len(n - 1)
  J[cbind(k + 1, k)] <- J[cbind(k, k + 1)] <- sqrt(k / 2)
  e <- eigen(J, symmetric = TRUE)
  o <- order(e$values)
  list(t = e$values[o], w = sqrt(pi) * e$vectors[1, o]^2)
}
