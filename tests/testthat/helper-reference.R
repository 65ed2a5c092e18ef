# The reference fits: a fixed set of small models, one per engine path, whose
# results are stored in tests/testthat/reference-fits.rds by
# `Rscript tools/reference-fits.R save` and compared by test-reference.R (and
# `Rscript tools/reference-fits.R compare`), so that a change of structure
# that should not change behaviour is seen to change nothing.  What is kept
# of each fit (reference_summary()) is read through the user-level generics
# only, so the comparison does not depend on how a fit stores its posterior.

reference_data <- function(n, seed) {
  set.seed(seed)
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n), z = rnorm(n),
                  f = factor(sample(c("a", "b", "c"), n, TRUE)))
  d$eta <- sin(2 * pi * d$x1) + (d$x2 - 0.5)^2 * 3 + 0.5 * d$z
  d$y <- d$eta + rnorm(n, sd = 0.3)
  d$yb <- as.integer(d$eta + rnorm(n) > 0.3)
  d$yp <- rpois(n, exp(0.3 * d$eta))
  d
}

# name -> a function(cluster) that returns the fit (cluster: a 2-worker
# PSOCK cluster for the fits that need one, else unused).
reference_models <- function() {
  ctl <- function(...) gp_control(verbose = FALSE, seed = 1, ...)
  d1 <- reference_data(400, 1)
  d2 <- reference_data(6000, 2)
  d3 <- reference_data(1500, 3)
  list(
    vi_gaussian_rows = function(cl) gpgam(y ~ gp(x1) + gp(x2) + z, data = d1, control = ctl(inducing = 15)),
    vi_gaussian_discrete = function(cl) gpgam(y ~ gp(x1) + gp(x2, x3) + f, data = d2, control = ctl(inducing = 16)),
    vi_meanfield = function(cl) gpgam(y ~ gp(x1) + gp(x2) + z, data = d1,
                                      control = ctl(inducing = 12, posterior = "meanfield")),
    vi_poisson = function(cl) gpgam(yp ~ gp(x1) + z, data = d1, family = poisson(), control = ctl(inducing = 12)),
    vi_probit = function(cl) gpgam(yb ~ gp(x1) + gp(x2), data = d1, family = binomial("probit"),
                                   control = ctl(inducing = 12)),
    vi_adam_minibatch = function(cl) gpgam(y ~ gp(x1) + z, data = d3,
                                           control = ctl(inducing = 12, batch_size = 300, iterations = 60)),
    ep_batch = function(cl) gpgam(yb ~ gp(x1, x2) + z, data = d1, family = binomial("probit"), inference = "ep",
                                  control = ctl(inducing = 12)),
    ep_minibatch = function(cl) gpgam(yb ~ gp(x1, x2), data = d3, family = binomial("probit"), inference = "ep",
                                      control = ctl(inducing = 12, batch_size = 300, iterations = 30)),
    ep_tied = function(cl) gpgam(yb ~ gp(x1, x2), data = d3, family = binomial("probit"), inference = "ep",
                                 control = ctl(inducing = 12, batch_size = 300, iterations = 30, sites = "tied")),
    ep_cluster = function(cl) gpgam(yb ~ gp(x1, x2) + z, data = d3, family = binomial("probit"), inference = "ep",
                                    control = ctl(inducing = 12, iterations = 25, cluster = cl)),
    decoupled_pilot = function(cl) gpgam(y ~ gp(x1, x2), data = d3, inference = "decoupled",
                                         control = ctl(inducing = 16)),
    decoupled_adam = function(cl) gpgam(y ~ gp(x1, x2), data = d3, inference = "decoupled",
                                        control = ctl(inducing = 16, pilot = 0, batch_size = 300,
                                                      iterations = 60, mean_basis = 64))
  )
}

# What is compared of a fit: numbers a user sees, through the generics.
reference_summary <- function(fit) {
  nd <- reference_data(25, 99)
  p <- predict(fit, nd, se.fit = TRUE)
  pt <- predict(fit, nd, type = "terms", se.fit = TRUE)
  s <- summary(fit)
  list(objective = as.numeric(logLik(fit)), iterations = fit$iterations, fitted = unname(fitted(fit)),
       coef = coef(fit), vcov = vcov(fit), pred = unname(p$fit), pred_se = unname(p$se.fit),
       terms = unname(pt$fit), terms_se = unname(pt$se.fit),
       s.table = if (!is.null(s$s.table)) unname(s$s.table), sigma = unname(sigma(fit)),
       variance = unname(vapply(fit$params$gp, `[[`, 1, "variance")),
       lengthscale = unname(unlist(lapply(fit$params$gp, `[[`, "lengthscale"))))
}

# A 2-worker PSOCK cluster that R CMD check's startup file does not reach.
reference_cluster <- function() {
  old <- Sys.getenv("R_TESTS")
  Sys.setenv(R_TESTS = "")
  on.exit(Sys.setenv(R_TESTS = old))
  parallel::makeCluster(2)
}

# Runs every reference model; returns name -> reference_summary().
reference_run <- function(names = NULL) {
  models <- reference_models()
  if (!is.null(names)) models <- models[names]
  cl <- reference_cluster()
  on.exit(parallel::stopCluster(cl))
  lapply(models, function(m) reference_summary(m(cl)))
}

# Per fit and quantity, the largest absolute difference (0: identical; Inf:
# shapes differ) between two results of reference_run().
reference_diff <- function(new, old) {
  out <- lapply(names(old), function(nm) {
    vapply(names(old[[nm]]), function(q) {
      a <- unlist(new[[nm]][[q]])
      b <- unlist(old[[nm]][[q]])
      if (length(a) != length(b) || is.null(a) != is.null(b)) return(Inf)
      if (!length(a)) return(0)
      if (identical(unname(a), unname(b))) return(0)
      max(abs(as.numeric(a) - as.numeric(b)) / pmax(1, abs(as.numeric(b))))
    }, 0)
  })
  names(out) <- names(old)
  out
}
