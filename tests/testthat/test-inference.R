# summary()'s term tests, deviance explained and R^2; AIC()/BIC() refused;
# anova() of several fits; residual types; simulate(); gp_check(); what
# plot() draws.

inf_data <- function(n = 300, seed = 3) {
  set.seed(seed)
  d <- data.frame(x0 = runif(n), x1 = runif(n), x2 = runif(n), g = factor(sample(c("a", "b"), n, TRUE)))
  d$y <- sin(2 * pi * d$x0) + 0.8 * d$x1 + rnorm(n, sd = 0.4)
  d
}
inf_ctl <- function(seed = 1, ...) qctl(inducing = 12, seed = seed, ...)

test_that("summary() tests gp() terms: tiny p for a clear effect, roughly uniform for a null term", {
  d <- inf_data()
  fit <- gpgam(y ~ gp(x0) + gp(x1) + gp(x2), data = d, control = inf_ctl())
  s <- summary(fit)
  st <- s$s.table
  expect_equal(rownames(st), c("gp(x0)", "gp(x1)", "gp(x2)"))
  expect_equal(colnames(st), c("edf", "Ref.df", "Chi.sq", "p-value"))
  expect_equal(unname(st[, "edf"]), unname(vapply(fit$params$gp, `[[`, 1, "edf")))
  expect_equal(unname(st[, "Ref.df"]), pmax(1, round(unname(st[, "edf"]))))
  expect_lt(st["gp(x0)", "p-value"], 1e-10)
  expect_lt(st["gp(x1)", "p-value"], 1e-4)
  expect_gt(st["gp(x2)", "p-value"], 0.01)
  # the statistic in plain R: f' V^{r-} f from the term's values at the data
  # and its posterior covariance there (the same centred features)
  X <- scalegp:::new_design(fit, NULL, na.pass)$X
  F <- scalegp:::.gp_features(fit$state$specs, X, fit$control$jitter, fit$state$center)$Phi
  idx <- scalegp:::component_blocks(fit)[[1]]
  f <- F[, idx] %*% fit$state$m[idx]
  V <- F[, idx] %*% fit$state$S[idx, idx] %*% t(F[, idx])
  ev <- eigen(V, symmetric = TRUE)
  r <- st["gp(x0)", "Ref.df"]
  expect_equal(sum((t(ev$vectors[, 1:r]) %*% f)^2 / ev$values[1:r]), st["gp(x0)", "Chi.sq"][[1]], tolerance = 1e-6)
  # printed like mgcv
  out <- capture.output(print(s))
  expect_true(any(grepl("Approximate significance of gp\\(\\) terms", out)))
  expect_true(any(grepl("R-sq.\\(adj\\) = .*Deviance explained = ", out)))
  # null p-values: not too many small ones over repeated data sets
  p <- vapply(1:25, function(k) {
    dd <- inf_data(200, seed = 100 + k)
    ff <- gpgam(y ~ gp(x0) + gp(x2), data = dd, control = inf_ctl(seed = k))
    summary(ff)$s.table["gp(x2)", "p-value"]
  }, 0)
  expect_lte(mean(p < 0.05), 0.16)
  expect_gt(stats::sd(p), 0.15)  # spread out, not stuck at 0 or 1
})

test_that("the term tests' null covariance is S H S, and their p-value that of the weighted chi-squares", {
  set.seed(3)
  n <- 300
  d <- data.frame(x0 = runif(n), z = rnorm(n))
  d$x1 <- 0.8 * d$x0 + 0.2 * runif(n)  # (correlated inputs: gp(x0) and gp(x1) coupled in the posterior)
  d$y <- sin(2 * pi * d$x0) + 0.5 * d$z + 0.2 * sin(6 * d$x1) + rnorm(n, sd = 0.4)
  fit <- gpgam(y ~ gp(x0) + gp(x1) + z, data = d, control = inf_ctl(tol = 1e-10))
  X <- scalegp:::new_design(fit, NULL, na.pass)$X
  # the likelihood's curvature from the (uncentred) whitened features: Phi' Phi / noise variance
  Phi <- scalegp:::.gp_features(fit$state$specs, X, fit$control$jitter)$Phi
  H <- crossprod(Phi) / exp(fit$state$log_noise)
  S <- fit$state$S
  bl <- scalegp:::component_blocks(fit)
  proj <- eval(quote(term_projection(fit, X)), list(fit = fit, X = X), asNamespace("scalegp"))
  Fc <- scalegp:::.gp_features(fit$state$specs, X, fit$control$jitter, fit$state$center)$Phi
  for (i in 1:2) {
    idx <- bl[[i]]
    # q is the exact posterior on the basis: S^-1 - I = H on the term's rows
    expect_lt(max(abs((solve(S) - diag(nrow(S)))[idx, ] - H[idx, ])), 1e-4 * max(abs(H[idx, ])))
    # covariance of the projected posterior mean Q'Phi_c m_c over repeated y: R (S H S)_cc R'
    qx <- qr(Fc[, idx], LAPACK = TRUE)
    R <- qr.R(qx)[, order(qx$pivot)]
    C <- R %*% (S %*% H %*% S)[idx, idx] %*% t(R)
    expect_lt(max(abs(proj[[i]]$null_cov - C)), 1e-4 * max(abs(C)))
    # the term's block alone (S_cc - S_cc^2) would miss its coupling with the other term
    wrong <- R %*% (S[idx, idx] - S[idx, idx] %*% S[idx, idx]) %*% t(R)
    expect_gt(max(abs(wrong - C)), 1e-2 * max(abs(C)))
  }
  # the p-value: that of sum lambda_i chi^2_1, lambda from V's leading Ref.df directions
  st <- summary(fit)$s.table
  V <- proj[[2]]$cov
  ev <- eigen(V, symmetric = TRUE)
  r <- st["gp(x1)", "Ref.df"]
  E <- ev$vectors[, 1:r, drop = FALSE] %*% diag(1 / sqrt(ev$values[1:r]), r)
  lam <- eigen(t(E) %*% proj[[2]]$null_cov %*% E, symmetric = TRUE)$values
  expect_true(all(lam > 0 & lam < 1))  # shrunk: chi-squared(r) would be conservative
  set.seed(9)
  draws <- colSums(lam * matrix(rchisq(r * 2e5, 1), r))
  p_mc <- mean(draws > st["gp(x1)", "Chi.sq"])
  expect_equal(st["gp(x1)", "p-value"][[1]], p_mc, tolerance = 4 * sqrt(p_mc * (1 - p_mc) / 2e5) / p_mc)
  expect_gt(st["gp(x1)", "p-value"][[1]], 0.05)  # (0.12; chi-squared(3) gives 0.31)
  expect_lt(st["gp(x1)", "p-value"][[1]], pchisq(st["gp(x1)", "Chi.sq"], r, lower.tail = FALSE) - 0.1)
})

test_that("pchisq_sum(): closed forms, Monte Carlo and the saddlepoint tail", {
  ps <- scalegp:::pchisq_sum
  # equal weights: a scaled chi-squared
  expect_equal(ps(3, rep(0.7, 4)), pchisq(3 / 0.7, 4, lower.tail = FALSE), tolerance = 1e-12)
  # weights (a, a, b, b): a exponential mixture, P = (a e^{-q/2a} - b e^{-q/2b}) / (a - b)
  a <- 2; b <- 0.5
  exact <- function(q) (a * exp(-q / (2 * a)) - b * exp(-q / (2 * b))) / (a - b)
  # (Imhof's integral: absolute error below 1e-6)
  for (q in c(0.3, 3, 7, 20, 40)) expect_lt(abs(ps(q, c(a, a, b, b)) - exact(q)), 1e-6)
  # beyond 1e-5 the saddlepoint: a few percent of the probability, far out in the tail
  for (q in c(80, 300)) expect_equal(ps(q, c(a, a, b, b)), exact(q), tolerance = 0.06)
  # a dominant weight (the integral fails; the saddlepoint), against Monte Carlo
  set.seed(1)
  lam <- c(1, 0.01)
  x <- colSums(lam * matrix(rchisq(4e5, 1), 2))
  for (q in quantile(x, c(0.5, 0.9, 0.99))) {
    p <- mean(x > q)
    expect_equal(ps(q, lam), p, tolerance = 0.03)
  }
  expect_equal(ps(sum(lam), lam), mean(x > sum(lam)), tolerance = 0.03)  # at the mean
  expect_equal(ps(-1, lam), 1)
  expect_equal(ps(1, numeric()), 0)
  expect_equal(ps(1, c(0.4, 1e-14)), pchisq(1 / 0.4, 1, lower.tail = FALSE), tolerance = 1e-12)
})

test_that("deviance explained and R^2 are those of lm() when there is no GP", {
  d <- inf_data()
  fit <- gpgam(y ~ x0 + x1 + g, data = d, control = inf_ctl(tol = 1e-10))
  l <- lm(y ~ x0 + x1 + g, data = d)
  s <- summary(fit)
  expect_equal(s$r.sq, summary(l)$adj.r.squared, tolerance = 1e-6)
  expect_equal(s$dev.expl, summary(l)$r.squared, tolerance = 1e-6)
  # binomial: against glm's deviance
  d$yb <- as.numeric(d$y > 0.5)
  fb <- gpgam(yb ~ x0 + x1, data = d, family = binomial(), control = inf_ctl(tol = 1e-10))
  gb <- glm(yb ~ x0 + x1, data = d, family = binomial())
  # (the deviance of the posterior mean response, not of the maximum-likelihood fit)
  expect_equal(summary(fb)$dev.expl, 1 - gb$deviance / gb$null.deviance, tolerance = 5e-3)
  expect_equal(summary(fb)$dev.expl,
               1 - sum(binomial()$dev.resids(d$yb, fitted(fb), 1)) / gb$null.deviance, tolerance = 1e-10)
  # R^2 of the fitted probabilities, as mgcv's for every family (mgcv centres the residuals; they
  # sum to about 0 here), and mgcv's names of the coefficient table
  sb <- summary(fb)
  r2 <- 1 - sum((d$yb - fitted(fb))^2) / (nrow(d) - 3) / stats::var(d$yb)
  expect_equal(sb$r.sq, r2, tolerance = 1e-10)
  expect_equal(sb$r.sq, summary(mgcv::gam(yb ~ x0 + x1, data = d, family = binomial()))$r.sq, tolerance = 0.02)
  expect_identical(sb$p.table, sb$coefficients)
  expect_identical(sb$p.coeff, coef(fb))
  expect_identical(sb$p.pv, setNames(sb$p.table[, "Pr(>|z|)"], rownames(sb$p.table)))
  expect_equal(sb$p.pv, 2 * pnorm(-abs(sb$p.table[, "z value"])), tolerance = 1e-12)
  # mgcv's edf and s.pv: the columns of s.table, by term
  fs <- gpgam(y ~ gp(x0) + x1, data = d, control = inf_ctl())
  ss <- summary(fs)
  expect_identical(ss$edf, c("gp(x0)" = ss$s.table["gp(x0)", "edf"]))
  expect_identical(ss$s.pv, c("gp(x0)" = ss$s.table["gp(x0)", "p-value"]))
  expect_equal(ss$residual.df, nrow(d) - sum(ss$edf) - 2, tolerance = 1e-8)
})

test_that("AIC() and BIC() refuse with a message; anova() of fits says what its numbers are", {
  d <- inf_data()
  f1 <- gpgam(y ~ gp(x0) + gp(x1), data = d, control = inf_ctl())
  f0 <- gpgam(y ~ gp(x0), data = d, control = inf_ctl())
  expect_error(AIC(f1), "AIC\\(\\) is not defined for scalegp fits.*anova")
  expect_error(BIC(f1), "BIC\\(\\) is not defined")
  a <- anova(f0, f1)
  expect_equal(a$ELBO, c(f0$objective, f1$objective))
  expect_equal(a[["Delta ELBO"]], c(NA, f1$objective - f0$objective))
  out <- capture.output(print(a))
  expect_true(any(grepl("log Bayes factors", out)))
  expect_true(any(grepl("No test is made", out)))
  expect_false(any(grepl("parametric coefficients", out)))
  # a fit without terms besides the intercept: summary() and anova() (they stopped on the empty term table)
  g <- gpgam(y ~ 1, data = d, control = inf_ctl())
  expect_equal(unname(coef(g)), mean(d$y), tolerance = 1e-6)
  expect_output(print(summary(g)), "Intercept")
  expect_equal(nrow(anova(g)), 0L)
  expect_output(print(anova(g)), "No terms besides the intercept")
  expect_true(is.na(predict(f1, data.frame(x0 = NA, x1 = 0.5))))
  # fits that differ in a parametric term: the note on its vague prior (Lindley's paradox)
  fz <- gpgam(y ~ gp(x0) + x1, data = d, control = inf_ctl())
  outz <- capture.output(print(anova(f0, fz)))
  expect_true(any(grepl("differ in parametric coefficients", outz)))
})

test_that("residual types and simulate()", {
  d <- inf_data()
  d$count <- rpois(nrow(d), exp(0.5 + sin(2 * pi * d$x0)))
  fp <- gpgam(count ~ gp(x0), data = d, family = poisson(), control = inf_ctl())
  mu <- fitted(fp)
  expect_close(residuals(fp, "response"), d$count - mu, 1e-12)
  expect_close(residuals(fp, "pearson"), (d$count - mu) / sqrt(mu), 1e-10)
  # glm's working residual at eta: (y - exp(eta)) / exp(eta), so -1 at a zero count
  # (not (y - mu) / exp(eta) with mu = E[exp(eta)] > exp(eta))
  eta <- fp$linear.predictors
  expect_close(residuals(fp, "working"), (d$count - exp(eta)) / exp(eta), 1e-10)
  expect_true(any(d$count == 0))
  expect_true(all(residuals(fp, "working")[d$count == 0] == -1))
  expect_close(residuals(fp), sign(d$count - mu) * sqrt(poisson()$dev.resids(d$count, mu, 1)), 1e-10)
  s <- simulate(fp, nsim = 400, seed = 1)
  expect_equal(dim(s), c(nrow(d), 400L))
  expect_true(all(as.matrix(s) >= 0 & as.matrix(s) == round(as.matrix(s))))
  # the posterior predictive mean is the fitted mean; its variance is at least mu
  expect_lt(max(abs(rowMeans(s) - mu) / sqrt(mu / 400)), 5)
  expect_gt(mean(apply(s, 1, var) / mu), 0.9)
  expect_identical(simulate(fp, nsim = 3, seed = 7), simulate(fp, nsim = 3, seed = 7))
  # as simulate.lm(): the "seed" attribute is the seed with its RNGkind, and
  # R's stream is left where it was
  set.seed(11)
  before <- .Random.seed
  s7 <- simulate(fp, nsim = 1, seed = 7)
  expect_identical(.Random.seed, before)
  expect_identical(attr(s7, "seed"), attr(simulate(lm(count ~ x0, d), seed = 7), "seed"))
  # a factor response: each draw a factor of its levels, as glm's
  d$yf <- factor(ifelse(d$count > 1, "many", "few"))
  ff <- gpgam(yf ~ gp(x0), data = d, family = binomial(), control = inf_ctl())
  # (one trial per row whatever the weights, as glm's for a factor response)
  fw <- gpgam(yf ~ gp(x0), data = d, family = binomial(), weights = rep(2, nrow(d)), control = inf_ctl())
  sw <- simulate(fw, nsim = 3, seed = 5)
  expect_false(anyNA(unlist(lapply(sw, as.character))))
  sf <- simulate(ff, nsim = 300, seed = 5)
  expect_true(all(vapply(sf, function(v) identical(levels(v), c("few", "many")), TRUE)))
  pm <- fitted(ff)
  expect_lt(max(abs(rowMeans(sapply(sf, `==`, "many")) - pm) / sqrt(pm * (1 - pm) / 300 + 1e-3)), 5)
  # a cbind(successes, failures) response: each draw is that matrix, as
  # glm's, with the row's trials and mean m * fitted
  d$m <- rep(1:5, length.out = nrow(d))
  d$s <- rbinom(nrow(d), d$m, plogis(sin(2 * pi * d$x0)))
  fb <- gpgam(cbind(s, m - s) ~ gp(x0), data = d, family = binomial(), control = inf_ctl())
  sb <- simulate(fb, nsim = 400, seed = 3)
  expect_identical(dim(sb$sim_1), c(nrow(d), 2L))
  expect_identical(colnames(sb$sim_1), c("s", ""))
  expect_true(all(vapply(sb, function(k) all(rowSums(k) == d$m & k >= 0), TRUE)))
  ks <- sapply(sb, function(k) k[, 1])
  expect_lt(max(abs(rowMeans(ks) - d$m * fitted(fb)) / sqrt(d$m * fitted(fb) * (1 - fitted(fb)) / 400 + 1e-3)), 5)
  expect_identical(colnames(simulate(glm(cbind(s, m - s) ~ x0, binomial, d), seed = 3)$sim_1), c("s", ""))
  # Gaussian: the draws' sd is about sqrt(sigma^2 + latent variance)
  fg <- gpgam(y ~ gp(x0), data = d, control = inf_ctl())
  sg <- simulate(fg, nsim = 500, seed = 2)
  pl <- predict(fg, se.fit = TRUE)
  expect_equal(mean(apply(sg, 1, sd)), mean(sqrt(sigma(fg)^2 + pl$se.fit^2)), tolerance = 0.05)
  # na.exclude: the dropped rows come back as NA, as fitted() and simulate.lm() give them;
  # the other rows are the draws of the fit without them (same seed, same draws)
  de <- d
  de$y[c(2, 5)] <- NA
  fe <- gpgam(y ~ gp(x0), data = de, na.action = na.exclude, control = inf_ctl())
  fo <- gpgam(y ~ gp(x0), data = de, control = inf_ctl())
  se <- simulate(fe, nsim = 3, seed = 4)
  so <- simulate(fo, nsim = 3, seed = 4)
  expect_identical(dim(se), c(nrow(d), 3L))
  expect_identical(rownames(se), rownames(d))
  expect_identical(which(is.na(se$sim_1)), c(2L, 5L))
  expect_equal(as.matrix(se[-c(2, 5), ]), as.matrix(so), tolerance = 1e-12)
  expect_equal(nrow(simulate(lm(y ~ x0, data = de, na.action = na.exclude), 2)), nrow(se))
  be <- d
  be$s[3] <- NA
  sbe <- simulate(gpgam(cbind(s, m - s) ~ gp(x0), data = be, family = binomial(), na.action = na.exclude,
                        control = inf_ctl()), nsim = 2, seed = 3)
  expect_identical(dim(sbe$sim_2), c(nrow(d), 2L))
  expect_identical(unname(which(is.na(sbe$sim_2[, 1]))), 3L)
})

test_that("gp_check() reports convergence and flags a term short of inducing points", {
  set.seed(4)
  d <- data.frame(x = runif(600))
  d$y <- sin(25 * d$x) + rnorm(600, sd = 0.1)
  few <- gpgam(y ~ gp(x, k = 5), data = d, control = inf_ctl())
  many <- gpgam(y ~ gp(x, k = 40), data = d, control = inf_ctl())
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  out_few <- capture.output(cf <- gp_check(few, rep = 100))
  out_many <- capture.output(cm <- gp_check(many, rep = 100))
  expect_equal(cf$convergence$converged, few$converged)
  expect_equal(cf$convergence$iterations, few$iterations)
  expect_true(cf$terms["gp(x)", "k-index"] < 0.5)
  expect_lt(cf$terms["gp(x)", "p-value"], 0.02)
  expect_true(any(grepl("Advice: gp\\(x\\) may need more inducing points", out_few)))
  expect_gt(cm$terms["gp(x)", "k-index"], 0.85)
  expect_false(any(grepl("Advice", out_many)))
  expect_error(gp_check(gpgam(y ~ gp(x), data = d, control = inf_ctl(), model = FALSE)), "model = FALSE")
  # a factor's random effect is exact (one effect per level): no advice, even at edf/M near 1, and k is named as unused
  set.seed(5)
  dr <- data.frame(x = runif(400), subj = factor(sample(1:20, 400, TRUE)))
  dr$y <- sin(6 * dr$x) + rnorm(20)[dr$subj] + rnorm(400, sd = 0.3)
  fr <- gpgam(y ~ gp(x) + gp(subj), data = dr, control = inf_ctl())
  out_re <- capture.output(cr <- gp_check(fr, rep = 50))
  expect_gt(cr$terms["gp(subj)", "edf/M"], 0.8)
  expect_false(any(grepl("Advice: gp\\(subj\\)", out_re)))
  expect_warning(fk <- gpgam(y ~ gp(x) + gp(subj, k = 60), data = dr, control = inf_ctl()),
                 "gp\\(subj\\): 'k' has no effect on a factor's random effect")
  expect_equal(fk$objective, fr$objective, tolerance = 1e-12)
})

test_that("gpgam() warns when a fit ends before a stationary point, as glm() does", {
  old <- options(scalegp.warn_convergence = NULL)
  on.exit(options(old))
  d <- inf_data()
  d$count <- rpois(nrow(d), exp(0.5 + sin(2 * pi * d$x0)))
  expect_warning(f2 <- gpgam(count ~ gp(x0), data = d, family = poisson(), control = inf_ctl(iterations = 2)),
                 "the fit did not converge \\(iteration limit\\)", class = "scalegp_convergence_warning")
  expect_false(f2$converged)
  expect_no_warning(f <- gpgam(count ~ gp(x0), data = d, family = poisson(), control = inf_ctl()))
  expect_true(f$converged)
  # a stochastic fit (qsgp) runs its iterations out by design: no warning
  expect_no_warning(fq <- gpgam(count ~ gp(x0), data = d, family = poisson(), inference = "qsgp",
                                control = qctl(iterations = 20, seed = 1)))
  expect_false(fq$converged)
  expect_false(any(grepl("did not converge", summary(fq)$warnings)))
  # a fit on minibatches ends by its stopping rule: print() and summary() say where, gpgam() does not warn
  expect_no_warning(fm <- gpgam(count ~ gp(x0), data = d, family = poisson(),
                                control = inf_ctl(batch_size = 50, iterations = 20)))
  expect_false(fm$converged)
  expect_true(any(grepl("did not converge", summary(fm)$warnings)))
  # the location-scale model's warning is of the same class
  expect_warning(gpgam(list(y ~ gp(x0), ~ 1), data = d, family = mgcv::gaulss(), control = inf_ctl(iterations = 2)),
                 "location-scale fit did not converge", class = "scalegp_convergence_warning")
  options(scalegp.warn_convergence = FALSE)
  expect_no_warning(gpgam(count ~ gp(x0), data = d, family = poisson(), control = inf_ctl(iterations = 2)))
})

test_that("plot() returns what it draws: bands, partial residuals, parametric terms, 2-D maps", {
  d <- inf_data()
  d$z <- rnorm(nrow(d))
  fit <- gpgam(y ~ gp(x0) + gp(x1, x2) + z + g, data = d, control = inf_ctl())
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  p <- plot(fit, residuals = TRUE, all.terms = TRUE, n = 25)
  expect_equal(vapply(p, `[[`, "", "label"), c("gp(x0)", "gp(x1, x2)", "z", "g"))
  # terms of several columns and interactions are named, not dropped silently
  fq <- gpgam(y ~ gp(x0) + poly(z, 2) + x1:g, data = d, control = inf_ctl())
  expect_message(pq <- plot(fq, all.terms = TRUE, n = 25), "not drawn: 'poly\\(z, 2\\)', 'x1:g'")
  expect_equal(vapply(pq, `[[`, "", "label"), "gp(x0)")
  # the 1-D curve is the term prediction at the grid, with its se
  tt <- predict(fit, data.frame(x0 = p[[1]]$x, x1 = 0.5, x2 = 0.5, z = 0, g = "a"), type = "terms", se.fit = TRUE)
  expect_close(p[[1]]$fit, tt$fit[, "gp(x0)"], 1e-10)
  expect_close(p[[1]]$se, tt$se.fit[, "gp(x0)"], 1e-10)
  # partial residuals: the term at the data plus the working residuals
  td <- predict(fit, type = "terms")
  expect_close(p[[1]]$p.resid, td[, "gp(x0)"] + residuals(fit, "working"), 1e-10)
  expect_close(p[[1]]$x.resid, d$x0, 1e-15)
  # the 2-D panel is a grid map, blank (NA) at grid points farther than too.far from the data
  expect_equal(dim(p[[2]]$fit), c(25L, 25L))
  p0 <- plot(fit, select = 2, n = 25, too.far = 0)[[1]]
  expect_false(anyNA(p0$fit))
  u <- (d$x1 - min(p0$x)) / diff(range(p0$x))
  v <- (d$x2 - min(p0$y)) / diff(range(p0$y))
  G <- expand.grid(x = (p0$x - min(p0$x)) / diff(range(p0$x)), y = (p0$y - min(p0$y)) / diff(range(p0$y)))
  dmin <- apply(G, 1, function(g) sqrt(min((u - g[1])^2 + (v - g[2])^2)))
  pf <- plot(fit, select = 2, n = 25, too.far = 0.05)[[1]]
  # (few data points: exact distances)
  expect_identical(is.na(c(pf$fit)), dmin > 0.05)
  expect_true(any(is.na(pf$fit)))
  # many points are first rounded to a grid four times finer: within an eighth of a cell's diagonal
  X <- cbind(runif(5000), runif(5000)^3)
  gx <- seq(0, 1, length.out = 25)
  far <- scalegp:::too_far_mask(gx, gx, X, 0.05)
  dm <- apply(expand.grid(gx, gx), 1, function(g) sqrt(min((X[, 1] - g[1])^2 + (X[, 2] - g[2])^2)))
  tol <- sqrt(2) / 8 / 24
  expect_true(all(far[dm > 0.05 + tol]))
  expect_false(any(far[dm < 0.05 - tol]))
  expect_error(plot(fit, too.far = NA_real_), "'too.far'")
  expect_equal(pf$fit[!is.na(pf$fit)], p0$fit[!is.na(pf$fit)])
  expect_error(plot(fit, too.far = -1), "'too.far'")
  # parametric terms: (x - mean) * beta with |x - mean| sd(beta), as termplot(); factor level effects
  expect_close(p[[3]]$fit, (p[[3]]$x - mean(d$z)) * coef(fit)[["z"]], 1e-12)
  expect_close(p[[3]]$se, abs(p[[3]]$x - mean(d$z)) * sqrt(vcov(fit)["z", "z"]), 1e-12)
  expect_close(p[[4]]$fit, c(0, coef(fit)[["gb"]]), 1e-12)
  # select, se = FALSE, scale = 0, schemes
  q <- plot(fit, select = 2, scheme = "persp")
  expect_length(q, 1)
  # persp()'s view from `...`, as mgcv's plot.gam(theta = , phi = )
  expect_silent(plot(fit, select = 2, scheme = 1, theta = -40, phi = 20, ticktype = "detailed"))
  expect_silent(plot(fit, se = FALSE, scale = 0, shade = FALSE, pages = 1))
  expect_silent(plot(fit, select = 2, scheme = 2))
  # mgcv's n2: the map's grid per input (it went to the graphics functions, six warnings)
  expect_silent(q2 <- plot(fit, select = 2, n2 = 10))
  expect_identical(dim(q2[[1]]$fit), c(10L, 10L))
  expect_identical(dim(plot(fit, select = 2, n = 30)[[1]]$fit), c(30L, 30L))
  expect_error(plot(fit, n2 = 0), "'n2'")
  expect_error(plot(fit, select = 9), "'select'")
  expect_error(plot(fit, se = "yes"), "'se'")
})
