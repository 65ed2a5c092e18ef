# Time of small binary fits with the installed build, to compare builds in
# one session (before and after the logit's expectation for latent
# variances above 1 of NEWS 2026-11-30), with mgcv::gam (REML) beside them:
#   R_LIBS=<library of a build> Rscript bench/small_binary.R <label> [gam: yes|no] [scale]
# Data: mgcv::gamSim(1, dist = "binary", scale = <scale>) with 500, 1000 and
# 2000 rows, seeds 1 to 3 (scale multiplies the logits (f - 5): gamSim's
# default 2, or 1 as in bench/prompt_vs_mgcv.R); model gp(x0) + gp(x1) + gp(x2) + gp(x3) against
# s(x0) + s(x1) + s(x2) + s(x3); one thread each.  Each fit is timed as the
# median of 3 runs.
# Appends one row per size to bench/results/small_binary.md: total seconds
# over the three seeds, evaluations and passes summed over them, the summed
# ELBO, and the share of training rows whose latent variance (se.fit^2)
# is above 1, where the new expectation replaces the composite rule.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
label <- if (length(args) >= 1) args[1] else "installed"
with_gam <- length(args) >= 2 && args[2] == "yes"
scale <- if (length(args) >= 3) as.numeric(args[3]) else 2
out <- file.path("bench", "results", "small_binary.md")
if (!file.exists(out))
  writeLines(c("# Small binary fits by build (`Rscript bench/small_binary.R <label> [yes]`)", "",
               "gamSim(1, dist = \"binary\", scale), seeds 1-3, four smooths, one thread; seconds: the sum over the seeds of each fit's median of 3 runs.", "",
               "| date | method | scale | rows | seconds | evaluations | passes | ELBO (sum) | share of rows with se.fit^2 > 1 |",
               "|---|---|---|---|---|---|---|---|---|"), out)
emit <- function(row) {
  cat(row, "\n")
  cat(row, "\n", file = out, append = TRUE, sep = "")
}
for (n in c(500, 1000, 2000)) {
  secs <- evals <- passes <- elbo <- wide <- gsecs <- 0
  for (s in 1:3) {
    set.seed(s)
    d <- gamSim(1, n = n, dist = "binary", scale = scale, verbose = FALSE)
    ctl <- gp_control(threads = 1, seed = 1, verbose = FALSE)
    t <- numeric(3)
    for (r in 1:3)
      t[r] <- system.time(fit <- gpgam(y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3), data = d, family = binomial(),
                                       control = ctl))[["elapsed"]]
    secs <- secs + median(t)
    evals <- evals + fit$evaluations
    passes <- passes + fit$passes
    elbo <- elbo + fit$objective
    wide <- wide + mean(predict(fit, d, se.fit = TRUE)$se.fit^2 > 1) / 3
    if (with_gam) {
      for (r in 1:3)
        t[r] <- system.time(gam(y ~ s(x0) + s(x1) + s(x2) + s(x3), data = d, family = binomial(), method = "REML"))[["elapsed"]]
      gsecs <- gsecs + median(t)
    }
  }
  emit(sprintf("| %s | gpgam, %s | %g | %d | %.2f | %d | %d | %.3f | %.3f |", format(Sys.Date()), label, scale, n, secs,
               evals, passes, elbo, wide))
  if (with_gam) emit(sprintf("| %s | gam REML (mgcv %s) | %g | %d | %.2f | - | - | - | - |", format(Sys.Date()),
                             packageVersion("mgcv"), scale, n, gsecs))
}
