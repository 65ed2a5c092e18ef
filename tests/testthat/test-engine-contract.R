# The engine contract (R/engine.R) proved by a second kind of posterior: the
# test-only random-feature engine of helper-engine-rff.R, registered here
# with no change to a shared file, gets every user-level method through the
# contract, and its numbers equal the closed form of its model computed in
# function space (K = Phi Phi'), not in the weight space the engine uses.

scalegp::register_engine("rff", rff_engine, methods = rff_methods)

rff_data <- function(n = 150, seed = 4) {
  set.seed(seed)
  d <- data.frame(x1 = runif(n), x2 = runif(n), z = rnorm(n))
  d$y <- sin(2 * pi * d$x1) + d$x2^2 + 0.5 * d$z + rnorm(n, sd = 0.3)
  d
}

test_that("a registered engine is offered by gpgam() and its options by gp_control()", {
  expect_true("rff" %in% names(scalegp:::engine_registry()))
  expect_error(gpgam(y ~ gp(x1), data = rff_data(), inference = "nope"), "rff")
  expect_error(gpgam(y ~ gp(x1), data = rff_data(), control = gp_control(features = 10, verbose = FALSE)),
               "option of inference = .*\"rff\"")  # (qsgp has an option `features` too)
})

test_that("the random-feature engine's predictions, edf and evidence equal the closed form", {
  d <- rff_data()
  fit <- gpgam(y ~ gp(x1) + gp(x2) + z, data = d, inference = "rff",
               control = gp_control(features = 40, seed = 3, verbose = FALSE))
  expect_s3_class(fit, "gpgam_rff")
  st <- fit$state
  ysc <- fit$scaling$y
  nd <- data.frame(x1 = seq(0, 1, length.out = 7), x2 = 0.3, z = seq(-1, 1, length.out = 7))
  X <- scalegp:::new_design(fit, NULL, stats::na.pass, mf = fit$model)$X
  Xn <- scalegp:::new_design(fit, nd, stats::na.pass)$X
  Phi <- rff_design(st, X)
  Phin <- rff_design(st, Xn)
  noise <- exp(st$log_noise)
  ys <- (d$y - ysc$center) / ysc$scale
  C <- tcrossprod(Phi) + diag(noise, nrow(d))
  kx <- Phin %*% t(Phi)
  mu <- ysc$center + ysc$scale * drop(kx %*% solve(C, ys))
  v <- ysc$scale^2 * (rowSums(Phin^2) - rowSums(kx * t(solve(C, t(kx)))))
  p <- predict(fit, nd, se.fit = TRUE)
  expect_close(p$fit, mu, 1e-8)
  expect_close(p$se.fit^2, v, 1e-8)
  # the edf of all components is the trace of the hat matrix K (K + noise I)^-1
  H <- tcrossprod(Phi) %*% solve(C)
  edf <- scalegp:::component_edf(fit)
  expect_close(sum(edf), sum(diag(H)), 1e-8)
  expect_close(sum(vapply(fit$params$gp, `[[`, 1, "edf")), sum(edf[1:2]), 1e-12)
  # the objective: log N(y; center, scale^2 C) on the data scale
  expect_close(as.numeric(logLik(fit)), ldmvnorm0(ys, C) - nrow(d) * log(ysc$scale), 1e-8)
  # centred terms plus the constant and the parametric term give the predictor
  pt <- predict(fit, nd, type = "terms", se.fit = TRUE)
  expect_close(rowSums(pt$fit) + attr(pt$fit, "constant"), p$fit, 1e-8)
  expect_close(colMeans(predict(fit, d, type = "terms")[, c("gp(x1)", "gp(x2)")]), c(0, 0), 1e-10)
  expect_close(fitted(fit), predict(fit, d), 1e-10)
})

test_that("the shared methods serve the random-feature engine through the contract", {
  d <- rff_data()
  fit <- gpgam(y ~ gp(x1) + gp(x2) + z, data = d, inference = "rff",
               control = gp_control(features = 30, seed = 5, verbose = FALSE))
  expect_output(print(fit), "gp\\(x1\\): .*30 random features")
  s <- summary(fit)
  expect_output(print(s), "features")
  expect_equal(unname(s$s.table[, "edf"]), unname(vapply(fit$params$gp, `[[`, 1, "edf")), tolerance = 1e-12)
  # gp(x1) carries a strong signal, the test says so
  expect_lt(s$s.table["gp(x1)", "p-value"], 1e-6)
  expect_true(all(is.finite(s$coefficients)))
  # the parametric coefficient of z is near its true value 0.5
  expect_lt(abs(coef(fit)[["z"]] - 0.5), 4 * sqrt(vcov(fit)["z", "z"]))
  a <- anova(fit)
  expect_s3_class(a, "gpgam_anova")
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_silent(plot(fit, pages = 1))
  chk <- NULL
  out <- capture.output(chk <- gp_check(fit, rep = 20, plot = FALSE))
  expect_true(any(grepl("^Random features of the gp\\(\\) terms", out)))
  expect_false(any(grepl("inducing points", out)))
  expect_equal(chk$terms$M, c(30L, 30L))
  # simulate(): the draws' mean approaches the posterior mean response
  sims <- simulate(fit, nsim = 400, seed = 1)
  expect_equal(dim(sims), c(nrow(d), 400L))
  mc_se <- sqrt(apply(as.matrix(sims), 1, stats::var) / 400)
  expect_lt(max(abs(rowMeans(as.matrix(sims)) - fitted(fit)) / mc_se), 5)
})

scalegp::register_engine("rff", NULL)
