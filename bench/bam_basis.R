# Is bam() faster than gpgam() at the same accuracy?  The design of
# bench/gam_design.R at 1e5 (and 1e6) rows, gpgam() with defaults against
# bam(discrete = TRUE, nthreads = 2) with mgcv's default bases
# (s(x1) + s(x2) + te(x3, x4): 10 + 10 + 5 x 5 functions) and with bases of
# the sizes gpgam's terms have (20, 20 and 64 inducing points:
# s(k = 20) + s(k = 20) + te(k = 8)), and larger ones (k = 40, 40, 12).
# Reports seconds, test NLPD and the 95% coverage of the latent function
# (one draw, 20 000 test rows), as bench/gam_vs_mgcv.R.
#   Rscript bench/bam_basis.R [sizes, default 1e5] [families, default gaussian,binomial]
# Writes bench/results/bam_basis.md.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
sizes <- if (length(args) >= 1) as.numeric(strsplit(args[1], ",")[[1]]) else 1e5
families <- if (length(args) >= 2) strsplit(args[2], ",")[[1]] else c("gaussian", "binomial")
source(file.path("bench", "gam_design.R"))  # ftrue(), gen(), score_fit()
set.seed(2026)
fbar <- mean(ftrue(gen(1e6, "gaussian", 0)))
invisible(bam(y ~ s(x1), data = gen(2000, "gaussian", 0), discrete = TRUE))  # (mgcv's first call loads code)
rows <- NULL
bam_row <- function(label, f, d, fam, family, n, test) {
  t <- system.time(b <- bam(f, data = d, family = fam, discrete = TRUE, nthreads = 2))[["elapsed"]]
  out <- score_fit(label, family, n, t, b, test)
  out$edf <- sum(b$edf)
  out
}
for (family in families) for (n in sizes) {
  set.seed(n + nchar(family))
  d <- gen(n, family, fbar)
  test <- gen(20000, family, fbar)
  fam <- if (family == "gaussian") gaussian() else binomial()
  t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = fam,
                                control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
  r <- score_fit("gpgam (20, 20, 64 inducing points)", family, n, t, fit, test)
  r$edf <- sum(vapply(fit$params$gp, `[[`, 1, "edf")) + 1
  rows <- rbind(rows, r)
  rows <- rbind(rows, bam_row("bam, default bases (10, 10, 5 x 5)", y ~ s(x1) + s(x2) + te(x3, x4), d, fam, family, n, test))
  rows <- rbind(rows, bam_row("bam, k = 20, 20, 8 x 8", y ~ s(x1, k = 20) + s(x2, k = 20) + te(x3, x4, k = 8), d, fam,
                              family, n, test))
  rows <- rbind(rows, bam_row("bam, k = 40, 40, 12 x 12", y ~ s(x1, k = 40) + s(x2, k = 40) + te(x3, x4, k = 12), d, fam,
                              family, n, test))
  print(rows[rows$family == family & rows$n == n, ], digits = 4)
}
md <- c("# bam() with larger bases against gpgam() (defaults), the design of bench/gam_design.R", "",
        sprintf("Command: `Rscript bench/bam_basis.R`; %s; %s, %d cores; mgcv %s; one run, nothing else running.",
                format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(), packageVersion("mgcv")), "",
        "bam: `discrete = TRUE, nthreads = 2`; gpgam: `threads = 2`. Test NLPD and 95% coverage of the latent function",
        "(Gaussian: f; binomial: the probability) on 20 000 fresh rows of one draw; edf: total (with the intercept).", "",
        "| family | n | method | seconds | test NLPD | coverage f | edf |", "|---|---|---|---|---|---|---|",
        sprintf("| %s | %.0e | %s | %.2f | %.4f | %.3f | %.1f |", rows$family, rows$n, rows$method, rows$seconds,
                rows$nlpd, rows$cover_f, rows$edf))
writeLines(md, file.path("bench", "results", "bam_basis.md"))
writeLines(md)
