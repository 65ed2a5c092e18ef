# gpgam (additive GP, seed 004) against mgcv::bam(discrete = TRUE, nthreads = 2)
# and mgcv::gam on the same data, in one run:
#   y = sin(3 x1) + 0.5 x2^2 + 2 exp(-(x3^2 + x4^2)) + noise (sd 0.3),  x ~ U(-2, 2)^4
#   binomial: y ~ Bernoulli(plogis(2 (f - mean f)))
# models gp(x1) + gp(x2) + gp(x3, x4)  vs  s(x1) + s(x2) + te(x3, x4).
# Reports wall time, test NLPD and 95% coverage on 20 000 fresh rows:
#   cover_f: intervals for the latent function (Gaussian: f; binomial: the
#            probability) covering the truth;  cover_y: predictive intervals
#            covering new y (Gaussian only).
#   Rscript bench/gam_vs_mgcv.R [sizes, e.g. 1e4,1e5,1e6] [families] [gam_max_n]
# Fits from 5000 rows use discretised covariates (vi_options(discrete)); up to
# 1e5 rows the fit over the rows (discrete = FALSE; binomial beyond 20 000
# rows: minibatches) is timed too.
# Writes bench/results/gam_vs_mgcv.md (and .csv).
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
sizes <- if (length(args) >= 1) as.numeric(strsplit(args[1], ",")[[1]]) else c(1e4, 1e5, 1e6)
families <- if (length(args) >= 2) strsplit(args[2], ",")[[1]] else c("gaussian", "binomial")
gam_max <- if (length(args) >= 3) as.numeric(args[3]) else 1e5
source(file.path("bench", "gam_design.R"))  # ftrue(), gen(), score_fit()
set.seed(2026)
fbar <- mean(ftrue(gen(1e6, "gaussian", 0)))  # mean of f over the input distribution
rows <- NULL
for (family in families) for (n in sizes) {
  set.seed(n + nchar(family))
  d <- gen(n, family, fbar)
  test <- gen(20000, family, fbar)
  fam <- if (family == "gaussian") gaussian() else binomial()
  # gpgam
  t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = fam,
                                control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
  rows <- rbind(rows, score_fit(if (isTRUE(fit$discrete)) "gpgam (discretised)" else "gpgam", family, n, t, fit, test))
  print(rows[nrow(rows), ])
  if (isTRUE(fit$discrete) && n <= 1e5) {  # the same fit over the rows, for comparison
    t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = fam,
                                  control = gp_control(threads = 2, seed = 1, verbose = FALSE,
                                                       discrete = FALSE)))[["elapsed"]]
    rows <- rbind(rows, score_fit("gpgam (rows)", family, n, t, fit, test))
    print(rows[nrow(rows), ])
  }
  # mgcv::bam
  t <- system.time(b <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, family = fam, discrete = TRUE,
                            nthreads = 2))[["elapsed"]]
  rows <- rbind(rows, score_fit("bam", family, n, t, b, test))
  print(rows[nrow(rows), ])
  if (n <= gam_max) {
    t <- system.time(g <- gam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, family = fam, method = "REML"))[["elapsed"]]
    rows <- rbind(rows, score_fit("gam", family, n, t, g, test))
    print(rows[nrow(rows), ])
  }
}
out <- file.path("bench", "results", "gam_vs_mgcv")
utils::write.csv(rows, paste0(out, ".csv"), row.names = FALSE)
md <- c("| family | n | method | seconds | test NLPD | coverage f | coverage y |", "|---|---|---|---|---|---|---|",
        sprintf("| %s | %.0e | %s | %.1f | %.4f | %.3f | %s |", rows$family, rows$n, rows$method, rows$seconds,
                rows$nlpd, rows$cover_f, ifelse(is.na(rows$cover_y), "-", sprintf("%.3f", rows$cover_y))),
        "", sprintf("Measured %s on %s, %d cores; mgcv %s.", format(Sys.time(), "%Y-%m-%d"), R.version$platform,
                    parallel::detectCores(), packageVersion("mgcv")))
writeLines(md, paste0(out, ".md"))
writeLines(md)
