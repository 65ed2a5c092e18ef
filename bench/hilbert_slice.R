# bench/hilbert_slice.R: gp(basis = "hilbert") (issue 37, first slice) against the
# default inducing-point basis and mgcv with defaults; one run, threads = 1.
# Rscript bench/hilbert_slice.R > bench/results/hilbert_slice.md
suppressMessages({library(scalegp); library(mgcv)})
`%||%` <- function(a, b) if (is.null(a)) b else a
ctl <- gp_control(verbose = FALSE, threads = 1)
rmse <- function(a, b) sqrt(mean((a - b)^2))
# mcycle: 5-fold CV test RMSE
data(mcycle, package = "MASS")
set.seed(1)
fold <- sample(rep(1:5, length.out = nrow(mcycle)))
res <- list()
for (b in c("inducing", "hilbert")) {
  f <- if (b == "hilbert") accel ~ gp(times, basis = "hilbert") else accel ~ gp(times)
  tt <- 0; pr <- numeric(nrow(mcycle))
  for (k in 1:5) {
    t0 <- proc.time()[[3]]
    fit <- gpgam(f, data = mcycle[fold != k, ], control = ctl)
    tt <- tt + proc.time()[[3]] - t0
    pr[fold == k] <- predict(fit, mcycle[fold == k, ])
  }
  res[[length(res) + 1]] <- data.frame(data = "mcycle 5-fold", basis = b, seconds = tt, rmse = rmse(pr, mcycle$accel))
}
tt <- 0; pr <- numeric(nrow(mcycle))
for (k in 1:5) { t0 <- proc.time()[[3]]; g <- gam(accel ~ s(times, k = 20), data = mcycle[fold != k, ], method = "REML")
  tt <- tt + proc.time()[[3]] - t0; pr[fold == k] <- predict(g, mcycle[fold == k, ]) }
res[[length(res) + 1]] <- data.frame(data = "mcycle 5-fold", basis = "mgcv gam REML s(k=20)", seconds = tt, rmse = rmse(pr, mcycle$accel))
# gamSim(1), n = 400, 4 terms; RMSE against the true f on 2000 test rows
for (seed in 1:3) {
  set.seed(seed)
  tr <- gamSim(1, n = 400, verbose = FALSE)
  te <- gamSim(1, n = 2000, verbose = FALSE)
  for (b in c("inducing", "hilbert")) {
    f <- if (b == "hilbert") y ~ gp(x0, basis = "hilbert") + gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert") + gp(x3, basis = "hilbert")
         else y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3)
    t0 <- proc.time()[[3]]
    fit <- gpgam(f, data = tr, control = ctl)
    tt <- proc.time()[[3]] - t0
    res[[length(res) + 1]] <- data.frame(data = paste0("gamSim(1) n=400 seed ", seed), basis = b, seconds = tt,
                                         rmse = rmse(predict(fit, te), te$f))
  }
  t0 <- proc.time()[[3]]
  g <- gam(y ~ s(x0) + s(x1) + s(x2) + s(x3), data = tr, method = "REML")
  res[[length(res) + 1]] <- data.frame(data = paste0("gamSim(1) n=400 seed ", seed), basis = "mgcv gam REML", seconds = proc.time()[[3]] - t0,
                                       rmse = rmse(predict(g, te), te$f))
}
print(do.call(rbind, res), digits = 3)

# 1e5 rows, three terms (discretised pass)
set.seed(1)
n <- 1e5
d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n))
f0 <- function(d) sin(6 * d$x1) + (2 * d$x2 - 1)^2 + 0.5 * cos(4 * d$x3)
d$y <- f0(d) + rnorm(n, sd = 0.5)
te <- data.frame(x1 = runif(5000), x2 = runif(5000), x3 = runif(5000))
for (b in c("inducing", "hilbert")) {
  f <- if (b == "hilbert") y ~ gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert") + gp(x3, basis = "hilbert")
       else y ~ gp(x1) + gp(x2) + gp(x3)
  t0 <- proc.time()[[3]]
  fit <- gpgam(f, data = d, control = gp_control(verbose = FALSE, threads = 1))
  tt <- proc.time()[[3]] - t0
  p <- predict(fit, te)
  cat(sprintf("1e5 rows, 3 terms, %-8s: %.2f s, RMSE vs truth %.4f, refits %s, sigma %.4f\n", b, tt,
              sqrt(mean((p - f0(te))^2)), fit$hilbert_refits %||% 0, fit$params$sigma))
}
