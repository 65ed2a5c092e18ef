# Time of binomial (logit) fits on the design of bench/gam_vs_mgcv.R at 1e5
# and 1e6 rows with the installed build, to compare builds in one session
# (e.g. before and after the logit's Taylor series of NEWS 2026-11-29):
#   R_LIBS=<library of a build> Rscript bench/logit_series.R <label> [sizes]
# Appends one row per size to bench/results/logit_series.md: seconds,
# evaluations and passes of the fit, its ELBO, and the share of training
# rows (the first 20 000) whose latent posterior variance (se.fit^2) is at
# most 0.01, where the series replaces the 6-node Gauss-Hermite rule.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
label <- if (length(args) >= 1) args[1] else "installed"
sizes <- if (length(args) >= 2) as.numeric(strsplit(args[2], ",")[[1]]) else c(1e5, 1e6)
source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
set.seed(2026)
fbar <- mean(ftrue(gen(1e6, "gaussian", 0)))
out <- file.path("bench", "results", "logit_series.md")
if (!file.exists(out))
  writeLines(c("# Binomial fits of the gam_vs_mgcv design by build (`Rscript bench/logit_series.R <label>`)", "",
               "| date | build | rows | seconds | evaluations | passes | ELBO | share of rows with se.fit^2 <= 0.01 |",
               "|---|---|---|---|---|---|---|---|"), out)
for (n in sizes) {
  set.seed(n + nchar("binomial"))  # the data of bench/gam_vs_mgcv.R
  d <- gen(n, "binomial", fbar)
  t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = binomial(),
                                control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
  se <- predict(fit, d[seq_len(min(n, 20000)), ], se.fit = TRUE)$se.fit
  row <- sprintf("| %s | %s | %g | %.1f | %d | %d | %.2f | %.3f |", format(Sys.Date()), label, n, t,
                 fit$evaluations, fit$passes, fit$objective, mean(se^2 <= 0.01))
  cat(row, "\n")
  cat(row, "\n", file = out, append = TRUE, sep = "")
}
