# Gamma(link = "log") and the negative binomial (mgcv::nb(), theta estimated;
# MASS::negative.binomial(theta), theta given) with inference = "vi": the
# objective's gradient in the likelihood's own parameter, recovery of the
# shape / theta and of the term on data drawn from the family (against
# mgcv::gam with REML), the methods, and refusals.  (The expectations
# themselves: test-likelihoods.R.)

family_data <- function(n, seed, family = c("gamma", "negbin"), shape = 5, theta = 3) {
  family <- match.arg(family)
  set.seed(seed)
  d <- data.frame(x = runif(n), z = rnorm(n))
  d$f <- sin(2 * pi * d$x)
  d$eta <- 1 + d$f + 0.3 * d$z
  d$y <- if (family == "gamma") rgamma(n, shape = shape, rate = shape / exp(d$eta))
         else rnbinom(n, size = theta, mu = exp(d$eta))
  d
}

# term RMSE of a centred estimate of f against the centred truth
term_rmse <- function(est, truth) sqrt(mean(((est - mean(est)) - (truth - mean(truth)))^2))

slope <- function(f, p, h = 1e-4) sapply(seq_along(p), function(k) {
  up <- p; dn <- p
  up[k] <- p[k] + h; dn[k] <- p[k] - h
  (f(up)$objective - f(dn)$objective) / (2 * h)
})

test_that("the objective's gradient in the kernel and the log shape / log theta matches finite differences", {
  skip_if_not_installed("mgcv")
  cases <- list(
    list(d = family_data(200, 11, "gamma"), family = Gamma(link = "log"), name = "log shape"),
    list(d = family_data(200, 12, "negbin"), family = mgcv::nb(), name = "log theta"))
  for (cs in cases) {
    fit <- gpgam(y ~ gp(x) + z, data = cs$d, family = cs$family, control = qctl(inducing = 10, tol = 1e-8))
    f <- gp_objective(fit)
    p0 <- attr(f, "start")
    expect_equal(names(p0)[length(p0)], cs$name)
    expect_equal(f(p0)$objective, fit$objective + fit$log_prior, tolerance = 1e-8)
    away <- p0 + c(0.3, -0.2, 0.25)
    s_away <- slope(f, away)
    g <- f(away)$gradient
    expect_gt(abs(s_away[3]), 1)  # the parameter moves the objective
    # (q is optimal at each point to the inner loop's tolerance)
    expect_close(g, s_away, 1e-3 * max(abs(s_away)),
                 label = paste(cs$name, "gradient", paste(signif(g - s_away, 3), collapse = " ")))
  }
})

test_that("Gamma: the shape and the term are recovered as well as by mgcv::gam (REML)", {
  skip_if_not_installed("mgcv")
  d <- family_data(2000, 1, "gamma", shape = 5)
  fit <- gpgam(y ~ gp(x) + z, data = d, family = Gamma(link = "log"), control = qctl())
  expect_true(fit$converged)
  expect_lt(abs(fit$params$shape / 5 - 1), 0.15)
  expect_equal(fit$scale, 1 / fit$params$shape)
  expect_equal(sigma(fit), 1 / sqrt(fit$params$shape))
  expect_equal(unname(coef(fit)["z"]), 0.3, tolerance = 0.05 / 0.3)
  g <- mgcv::gam(y ~ s(x) + z, data = d, family = Gamma(link = "log"), method = "REML")
  r_gp <- term_rmse(predict(fit, d, type = "terms")[, "gp(x)"], d$f)
  r_gam <- term_rmse(predict(g, d, type = "terms")[, "s(x)"], d$f)
  expect_lt(r_gp, 1.5 * r_gam + 0.02)
  # the mean response: exp(eta + se^2 / 2)
  nd <- data.frame(x = c(0.1, 0.5, 0.8), z = 0)
  p <- predict(fit, nd, se.fit = TRUE)
  pr <- predict(fit, nd, type = "response", se.fit = TRUE)
  expect_equal(unname(pr$fit), unname(exp(p$fit + p$se.fit^2 / 2)), tolerance = 1e-12)
  expect_equal(unname(pr$se.fit), unname(pr$fit * sqrt(expm1(p$se.fit^2))), tolerance = 1e-10)
  # 2000 rows, one-input terms: discretised covariates by default, so fitted()
  # interpolates each term from its grid of rounded inputs while predict()
  # evaluates it at the rows (measured: 3.5e-5 relative at most; without the
  # variance term exp(se^2 / 2) they would differ by 4e-4 to 2e-3)
  expect_true(fit$discrete)
  expect_lt(max(abs(fitted(fit) / predict(fit, type = "response") - 1)), 1e-4)
})

test_that("a theta at the top of its range: summary() says Poisson fits; the convergence line names the bound", {
  # the stopping rule projects out the gradient of a parameter at a bound: the line reports the largest
  # gradient of the others and lists the bound one apart (it reported 0.012 for log theta, 19x the tolerance)
  fk <- list(gradient = c(a = 1e-4, "log theta" = 0.5), control = list(tol = 1e-6), n = 1000, converged = TRUE)
  expect_identical(scalegp:::convergence_line(fk),
                   paste0("converged to a stationary point: largest gradient 1e-04 (a), tolerance 0.001; ",
                          "at a bound of its range: log theta (gradient 0.5)"))
  fk$converged <- FALSE
  expect_match(scalegp:::convergence_line(fk), "^NOT converged .*largest gradient 0.5 \\(log theta\\), tolerance 0.001$")
  # claims no more dispersed than Poisson (mgcv's nb() puts theta at 2e6): theta runs to its bound, exp(10)
  skip_if_not_installed("MASS")
  d <- MASS::Insurance
  fit <- gpgam(Claims ~ District + Group + Age + gp(Holders), offset = log(Holders), data = d,
               family = mgcv::nb(), control = qctl())
  expect_equal(log(fit$params$theta), 10, tolerance = 1e-6)
  expect_identical(scalegp:::.lik_log_noise_range()[2], 10)  # (the core's bound, as ?gpgam says: exp(10))
  expect_match(summary(fit)$warnings, "theta reached the top of its range .* family = poisson\\(\\)", all = FALSE)
  expect_match(summary(fit)$convergence, "at a bound of its range: log theta")
  expect_null(scalegp:::lik_bound_note(gpgam(Claims ~ gp(Holders), offset = log(Holders), data = d,
                                             family = MASS::negative.binomial(5), control = qctl())))
})

test_that("negative binomial: theta and the term are recovered as well as by mgcv::gam (REML)", {
  skip_if_not_installed("mgcv")
  skip_if_not_installed("MASS")
  d <- family_data(2000, 2, "negbin", theta = 3)
  fit <- gpgam(y ~ gp(x) + z, data = d, family = mgcv::nb(), control = qctl())
  expect_true(fit$converged)
  expect_lt(abs(fit$params$theta / 3 - 1), 0.2)
  expect_false(fit$params$theta_fixed)
  expect_equal(fit$scale, 1)
  g <- mgcv::gam(y ~ s(x) + z, data = d, family = mgcv::nb(), method = "REML")
  r_gp <- term_rmse(predict(fit, d, type = "terms")[, "gp(x)"], d$f)
  r_gam <- term_rmse(predict(g, d, type = "terms")[, "s(x)"], d$f)
  expect_lt(r_gp, 1.5 * r_gam + 0.02)
  # theta given: MASS::negative.binomial(theta) keeps it; one estimated quantity fewer
  fit3 <- gpgam(y ~ gp(x) + z, data = d, family = MASS::negative.binomial(3), control = qctl(seed = 1))
  expect_equal(fit3$params$theta, 3)
  expect_true(fit3$params$theta_fixed)
  expect_equal(fit3$df, fit$df - 1)
  expect_true("log theta" %in% names(fit$gradient))
  expect_false("log theta" %in% names(fit3$gradient))
  # mgcv::nb(theta = 3) gives it too (the same model and seed: the same fit)
  fitn <- gpgam(y ~ gp(x) + z, data = d, family = mgcv::nb(theta = 3), control = qctl(seed = 1))
  expect_equal(fitn$params$theta, 3)
  expect_equal(fitn$objective, fit3$objective, tolerance = 1e-7)
  # and mgcv::negbin(3), the family of mgcv's gam() with theta given
  fitg <- gpgam(y ~ gp(x) + z, data = d, family = mgcv::negbin(3), control = qctl(seed = 1))
  expect_true(fitg$params$theta_fixed)
  expect_equal(fitg$objective, fit3$objective, tolerance = 1e-7)
  expect_output(print(fit3), "theta: 3 (given)", fixed = TRUE)
})

test_that("discretised covariates and minibatches (Adam) estimate the shape and theta too", {
  skip_if_not_installed("mgcv")
  d <- family_data(6000, 8, "gamma", shape = 5)
  fd <- gpgam(y ~ gp(x) + z, data = d, family = Gamma(link = "log"), control = qctl())
  expect_true(fd$discrete)
  expect_lt(abs(fd$params$shape / 5 - 1), 0.1)
  fa <- gpgam(y ~ gp(x) + z, data = d, family = Gamma(link = "log"),
              control = qctl(discrete = FALSE, batch_size = 500, iterations = 300, seed = 1))
  expect_lt(abs(fa$params$shape / 5 - 1), 0.1)
  dn <- family_data(6000, 9, "negbin", theta = 3)
  fn <- gpgam(y ~ gp(x) + z, data = dn, family = mgcv::nb(), control = qctl())
  expect_true(fn$discrete)
  expect_lt(abs(fn$params$theta / 3 - 1), 0.15)
})

test_that("Gamma weights multiply the shape (as glm's weights divide the dispersion)", {
  d <- family_data(500, 7, "gamma", shape = 3)
  # (the same seed, so both fits start from the same inducing inputs; the SE
  # kernel, with which the tolerances below were measured)
  a <- gpgam(y ~ gp(x, kernel = "se"), data = d, family = Gamma(link = "log"), control = qctl(inducing = 10, seed = 1))
  d$w2 <- 2
  b <- gpgam(y ~ gp(x, kernel = "se"), data = d, family = Gamma(link = "log"), weights = w2,
             control = qctl(inducing = 10, seed = 1))
  # the same likelihood with shape k / 2 at weight 2: the same fit, half the shape
  expect_equal(b$params$shape, a$params$shape / 2, tolerance = 1e-3)
  expect_equal(b$objective, a$objective, tolerance = 1e-6)
  expect_equal(unname(fitted(b)), unname(fitted(a)), tolerance = 1e-4)
})

test_that("print, summary, simulate, residuals and family of Gamma and negative binomial fits", {
  skip_if_not_installed("mgcv")
  d <- family_data(300, 3, "gamma", shape = 4)
  fit <- gpgam(y ~ gp(x) + z, data = d, family = Gamma(link = "log"), control = qctl(inducing = 12))
  expect_output(print(fit), "Family: Gamma \\(log\\).*shape: [0-9.]+ \\(scale = 1/shape = [0-9.]+\\)")
  s <- summary(fit)
  expect_output(print(s), "shape: [0-9.]+ \\(scale = 1/shape")
  expect_output(print(s), "Deviance explained")
  expect_true(is.finite(s$dev.expl) && s$dev.expl > 0.2)
  expect_equal(family(fit)$family, "Gamma")
  expect_equal(family(fit)$link, "log")
  sims <- simulate(fit, nsim = 50, seed = 1)
  expect_true(all(as.matrix(sims) > 0))
  expect_equal(mean(as.matrix(sims)), mean(d$y), tolerance = 0.1)
  # the simulated spread matches the fitted shape: var(y / mu) = 1 / shape
  expect_equal(var(as.vector(as.matrix(sims) / fitted(fit))), 1 / fit$params$shape, tolerance = 0.2)
  rp <- residuals(fit, "pearson")
  # as glm()'s: (y - mu) / sqrt(V(mu)), V(mu) = mu^2, with no dispersion (1 / shape)
  expect_equal(unname(rp), unname((d$y - fitted(fit)) / fitted(fit)), tolerance = 1e-12)
  expect_true(all(is.finite(residuals(fit))))
  expect_true(is.finite(logLik(fit)))
  expect_equal(names(fit$gradient)[length(fit$gradient)], "log shape")

  dn <- family_data(300, 4, "negbin", theta = 2)
  fn <- gpgam(y ~ gp(x) + z, data = dn, family = mgcv::nb(), control = qctl(inducing = 12))
  expect_output(print(fn), "Family: negative binomial \\(log\\).*theta: [0-9.]+")
  expect_output(print(summary(fn)), "theta: [0-9.]+")
  expect_match(family(fn)$family, "^Negative Binomial\\(")
  sn <- as.matrix(simulate(fn, nsim = 50, seed = 2))
  expect_true(all(sn >= 0 & sn == round(sn)))
  expect_equal(mean(sn), mean(dn$y), tolerance = 0.15)
  # the deviance residuals are those of glm's negative binomial at the fitted theta
  mu <- fitted(fn)
  th <- fn$params$theta
  dev <- 2 * (dn$y * log(pmax(1, dn$y) / mu) - (dn$y + th) * log((dn$y + th) / (mu + th)))
  expect_equal(unname(residuals(fn)), sign(dn$y - mu) * sqrt(pmax(dev, 0)), tolerance = 1e-12)
  expect_equal(names(fn$gradient)[length(fn$gradient)], "log theta")
})

test_that("bad responses and unsupported families and engines are refused with a clear message", {
  skip_if_not_installed("mgcv")
  skip_if_not_installed("MASS")
  d <- family_data(60, 5, "gamma")
  d0 <- d
  d0$y[7] <- 0
  expect_error(gpgam(y ~ gp(x), data = d0, family = Gamma(link = "log"), control = qctl()),
               "'y' must be positive for Gamma\\(\\): 1 value\\(s\\) <= 0 \\(the first, in row 7, is 0\\)")
  d0$y[7] <- -2
  expect_error(gpgam(y ~ gp(x), data = d0, family = Gamma(link = "log"), control = qctl()), "'y' must be positive")
  expect_error(gpgam(y ~ gp(x), data = d, family = Gamma(), control = qctl()),
               "'family' Gamma with link 'inverse' is not supported \\(use Gamma\\(link = \"log\"\\)\\); supported: ")
  dn <- family_data(60, 6, "negbin")
  dn$y[3] <- 2.5
  expect_error(gpgam(y ~ gp(x), data = dn, family = mgcv::nb(), control = qctl()),
               "'y' must be non-negative integer counts for the negative binomial: 1 value\\(s\\) are not \\(the first, in row 3, is 2.5\\)")
  dn$y[3] <- -1
  expect_error(gpgam(y ~ gp(x), data = dn, family = MASS::negative.binomial(2), control = qctl()),
               "'y' must be non-negative integer counts")
  expect_error(gpgam(y ~ gp(x), data = d, family = mgcv::negbin(c(1, 10)), control = qctl()),
               "'family' gives the negative binomial theta as a range \\(Negative Binomial\\( 1\\) to .*; use mgcv::nb\\(\\)")
  # other families: the list of those supported, with the new ones
  for (fam in list(mgcv::ocat(R = 3), mgcv::tw(), inverse.gaussian(), quasipoisson()))
    expect_error(gpgam(y ~ gp(x), data = d, family = fam, control = qctl()),
                 "'family' .*not supported; supported: .*Gamma\\(link = \"log\"\\).*mgcv::nb\\(\\).*MASS::negative.binomial.*mgcv::scat\\(\\)")
  # other engines
  for (inf in c("ep", "decoupled", "qsgp"))
    expect_error(gpgam(y ~ gp(x), data = d, family = Gamma(link = "log"), inference = inf, control = qctl()),
                 paste0("'family' Gamma\\(link = \"log\"\\) is not supported by inference = \"", inf,
                        "\", which fits .*; use inference = \"vi\""))
  expect_error(gpgam(y ~ gp(x), data = d, family = mgcv::nb(), inference = "ep", control = qctl()),
               "'family' the negative binomial is not supported by inference = \"ep\", which fits binomial\\(link = \"probit\"\\)")
  expect_error(dgp(y ~ x, data = d, family = Gamma(link = "log")), "'family' must be gaussian\\(\\) or binomial")
})
