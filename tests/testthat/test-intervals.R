# predict(interval = ): the posterior interval of the mean response is the
# image of eta +/- z se under the inverse link, and the prediction interval's
# ends are the quantiles of the posterior predictive distribution, checked
# against integrate() over the predictor's posterior (Gamma, scaled t, and
# the smallest count with F >= p for Poisson and the negative binomial);
# refusals for binomial predictions and link-scale predictions of log links.

mix_cdf <- function(cdf, y, eta, se)
  integrate(function(f) cdf(y, f) * dnorm(f, eta, se), eta - 12 * se, eta + 12 * se, rel.tol = 1e-12)$value

test_that("confidence intervals are the inverse link of eta +/- z se; prediction ends are predictive quantiles", {
  skip_if_not_installed("mgcv")
  set.seed(3)
  n <- 300
  d <- data.frame(x = runif(n))
  eta <- 1 + sin(2 * pi * d$x)
  d$yg <- rgamma(n, 5, 5 / exp(eta))
  d$yp <- rpois(n, exp(eta))
  d$yn <- rnbinom(n, size = 3, mu = exp(eta))
  d$yt <- eta + 0.3 * rt(n, 4)
  nd <- data.frame(x = c(0.05, 0.4, 0.9))
  cases <- list(
    list(f = yg ~ gp(x), fam = Gamma(link = "log"), cdf = function(fit) function(y, f)
      pgamma(y, shape = fit$params$shape, rate = fit$params$shape / exp(f)), counts = FALSE),
    list(f = yt ~ gp(x), fam = mgcv::scat(), cdf = function(fit) function(y, f)
      pt((y - f) / fit$params$sigma, fit$params$df), counts = FALSE),
    list(f = yp ~ gp(x), fam = poisson(), cdf = function(fit) function(y, f) ppois(y, exp(f)), counts = TRUE),
    list(f = yn ~ gp(x), fam = mgcv::nb(), cdf = function(fit) function(y, f)
      pnbinom(y, size = fit$params$theta, mu = exp(f)), counts = TRUE))
  for (cs in cases) {
    fit <- gpgam(cs$f, data = d, family = cs$fam, control = qctl(inducing = 15))
    lab <- fit$family$family
    lp <- predict(fit, nd, se.fit = TRUE)
    z <- qnorm(0.95)
    ci <- predict(fit, nd, type = "response", interval = "confidence", level = 0.9)
    inv <- family(fit)$linkinv
    expect_equal(unname(ci[, "lwr"]), unname(inv(lp$fit - z * lp$se.fit)), tolerance = 1e-12, label = lab)
    expect_equal(unname(ci[, "upr"]), unname(inv(lp$fit + z * lp$se.fit)), tolerance = 1e-12, label = lab)
    expect_equal(unname(ci[, "fit"]), unname(predict(fit, nd, type = "response")))
    pi <- predict(fit, nd, type = "response", interval = "prediction", level = 0.9)
    cdf <- cs$cdf(fit)
    for (i in seq_len(nrow(nd))) {
      Fm <- function(y) mix_cdf(cdf, y, lp$fit[i], lp$se.fit[i])
      if (cs$counts) {  # the smallest count whose predictive CDF reaches p
        for (e in c("lwr", "upr")) {
          p <- if (e == "lwr") 0.05 else 0.95
          k <- pi[i, e]
          expect_true(k == round(k) && Fm(k) >= p - 1e-9 && (k == 0 || Fm(k - 1) < p + 1e-9),
                      label = sprintf("%s row %d %s = %g", lab, i, e, k))
        }
      } else {
        expect_equal(Fm(pi[i, "lwr"]), 0.05, tolerance = 1e-6, label = paste(lab, "lower", i))
        expect_equal(Fm(pi[i, "upr"]), 0.95, tolerance = 1e-6, label = paste(lab, "upper", i))
      }
    }
  }
})

test_that("intervals that do not exist are refused naming the argument", {
  set.seed(4)
  d <- data.frame(x = runif(100))
  d$y <- rbinom(100, 1, plogis(sin(4 * d$x)))
  d$c <- rpois(100, exp(sin(4 * d$x)))
  fb <- gpgam(y ~ gp(x), data = d, family = binomial(), control = qctl(inducing = 10))
  expect_error(predict(fb, d[1:2, ], type = "response", interval = "prediction"),
               "'interval' = \"prediction\" is not given for binomial \\(a new response is a proportion of whole trials")
  ci <- predict(fb, d[1:2, ], type = "response", interval = "confidence")
  expect_true(all(ci[, "lwr"] > 0 & ci[, "upr"] < 1 & ci[, "lwr"] < ci[, "upr"]))
  fp <- gpgam(c ~ gp(x), data = d, family = poisson(), control = qctl(inducing = 10))
  expect_error(predict(fp, d[1:2, ], interval = "prediction"), "'interval' = \"prediction\" is on the scale of the response")
  expect_error(predict(fp, d[1:2, ], type = "terms", interval = "confidence"), "'interval' is for type")
})
