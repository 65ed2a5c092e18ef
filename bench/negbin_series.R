# Time of negative binomial fits with the installed build, to compare builds
# in one session (before and after the negative binomial's Taylor series of
# NEWS 2026-11-30), with mgcv::bam(family = nb(), discrete = TRUE) beside
# them:
#   R_LIBS=<library of a build> Rscript bench/negbin_series.R <label> [sizes] [bam: yes|no]
# Data: x ~ U(0, 1)^3, log mu = 0.3 + 0.5 sin(2 pi x1) + 0.8 (x2 - 0.5)
#       + 0.6 exp(-((x3 - 0.5) / 0.15)^2), y ~ NB(mu, theta = 2);
# models gp(x1) + gp(x2) + gp(x3) (family = mgcv::nb(), theta estimated) and
# s(x1) + s(x2) + s(x3).
# Appends one row per size and method to bench/results/negbin_series.md:
# seconds, evaluations and passes of the fit, its ELBO, the fitted theta,
# the RMSE of the linear predictor against the truth on 20 000 new rows, and
# the share of training rows (the first 20 000) whose latent posterior
# variance (se.fit^2) is at most 0.01, where the series replaces the 6-node
# Gauss-Hermite rule.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
label <- if (length(args) >= 1) args[1] else "installed"
sizes <- if (length(args) >= 2) as.numeric(strsplit(args[2], ",")[[1]]) else c(1e5, 1e6)
with_bam <- length(args) >= 3 && args[3] == "yes"
eta_true <- function(d) 0.3 + 0.5 * sin(2 * pi * d$x1) + 0.8 * (d$x2 - 0.5) + 0.6 * exp(-((d$x3 - 0.5) / 0.15)^2)
gen <- function(n) {
  d <- data.frame(x1 = runif(n), x2 = runif(n), x3 = runif(n))
  d$eta <- eta_true(d)
  d$y <- rnbinom(n, size = 2, mu = exp(d$eta))
  d
}
out <- file.path("bench", "results", "negbin_series.md")
if (!file.exists(out))
  writeLines(c("# Negative binomial fits by build (`Rscript bench/negbin_series.R <label> [sizes] [yes]`)", "",
               "| date | method | rows | seconds | evaluations | passes | ELBO | theta | RMSE of eta | share of rows with se.fit^2 <= 0.01 |",
               "|---|---|---|---|---|---|---|---|---|---|"), out)
emit <- function(row) {
  cat(row, "\n")
  cat(row, "\n", file = out, append = TRUE, sep = "")
}
for (n in sizes) {
  set.seed(n)
  d <- gen(n)
  test <- gen(20000)
  t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3), data = d, family = nb(),
                                control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
  se <- predict(fit, d[seq_len(min(n, 20000)), ], se.fit = TRUE)$se.fit
  rmse <- sqrt(mean((predict(fit, test) - test$eta)^2))
  emit(sprintf("| %s | gpgam, %s | %g | %.1f | %d | %d | %.2f | %.3f | %.4f | %.3f |", format(Sys.Date()), label, n, t,
               fit$evaluations, fit$passes, fit$objective, fit$params$theta, rmse, mean(se^2 <= 0.01)))
  if (with_bam) {
    t <- system.time(b <- bam(y ~ s(x1) + s(x2) + s(x3), data = d, family = nb(), discrete = TRUE,
                              nthreads = 2))[["elapsed"]]
    rmse <- sqrt(mean((predict(b, test) - test$eta)^2))
    emit(sprintf("| %s | bam (mgcv %s) | %g | %.1f | - | - | - | %.3f | %.4f | - |", format(Sys.Date()),
                 packageVersion("mgcv"), n, t, b$family$getTheta(TRUE), rmse))
  }
}
