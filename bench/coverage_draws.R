# Calibration of the latent-function bands over repeated draws, on the design
# of bench/gam_vs_mgcv.R (bench/gam_design.R), gpgam() against
# mgcv::bam(discrete = TRUE, nthreads = 2), defaults on both sides.
# One draw's coverage is the share of its test rows covered; the rows of one
# draw share one fitted curve, so one draw says little about calibration.
# This script fits `draws` fresh data sets per size and reports the mean
# coverage over draws, its standard error, and the range.
#   Gaussian: 95% intervals for f;  binomial: for the probability.
#   Rscript bench/coverage_draws.R [sizes] [families] [draws] [test rows] [name] [kernel]
# (kernel: of every gp() term; default the package default)
# Writes bench/results/<name>.md (name: coverage_draws).
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
sizes <- if (length(args) >= 1) as.numeric(strsplit(args[1], ",")[[1]]) else c(1e4, 1e5)
families <- if (length(args) >= 2) strsplit(args[2], ",")[[1]] else c("gaussian", "binomial")
draws <- if (length(args) >= 3) as.integer(args[3]) else 20L
ntest <- if (length(args) >= 4) as.numeric(args[4]) else 5000
name <- if (length(args) >= 5) args[5] else "coverage_draws"
kernel <- if (length(args) >= 6) args[6]
form <- if (is.null(kernel)) y ~ gp(x1) + gp(x2) + gp(x3, x4) else
  as.formula(sprintf("y ~ gp(x1, kernel = '%s') + gp(x2, kernel = '%s') + gp(x3, x4, kernel = '%s')",
                     kernel, kernel, kernel))
source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
set.seed(2026)
fbar <- mean(ftrue(gen(1e6, "gaussian", 0)))  # as bench/gam_vs_mgcv.R
cover <- function(family, mu, se, truth) {
  if (family == "gaussian") mean(abs(truth - mu) <= 1.96 * se)
  else mean(plogis(mu - 1.96 * se) <= truth & truth <= plogis(mu + 1.96 * se))
}
rows <- NULL
for (family in families) for (n in sizes) {
  fam <- if (family == "gaussian") gaussian() else binomial()
  res <- matrix(NA_real_, draws, 4, dimnames = list(NULL, c("gpgam", "bam", "gpgam_s", "bam_s")))
  for (r in seq_len(draws)) {
    set.seed(1000 * r + n + nchar(family))
    d <- gen(n, family, fbar)
    test <- gen(ntest, family, fbar)
    res[r, "gpgam_s"] <- system.time(fit <- gpgam(form, data = d, family = fam,
                                                   control = gp_control(threads = 2, seed = r, verbose = FALSE)))[[3]]
    p <- predict(fit, test, se.fit = TRUE)
    res[r, "gpgam"] <- cover(family, p$fit, p$se.fit, test$truth)
    res[r, "bam_s"] <- system.time(b <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, family = fam,
                                            discrete = TRUE, nthreads = 2))[[3]]
    p <- predict(b, test, se.fit = TRUE)
    res[r, "bam"] <- cover(family, p$fit, p$se.fit, test$truth)
  }
  for (m in c("gpgam", "bam")) {
    x <- res[, m]
    rows <- rbind(rows, data.frame(family = family, n = n, method = m, draws = draws, mean = mean(x),
                                   se = sd(x) / sqrt(draws), min = min(x), max = max(x),
                                   within = mean(x >= 0.93 & x <= 0.97),
                                   seconds = stats::median(res[, paste0(m, "_s")])))
  }
  print(rows[nrow(rows) - 1:0, ], row.names = FALSE)
}
md <- c(sprintf("Coverage of the latent function by 95%% intervals, mean over %d draws (fresh data and %g test rows each); `Rscript bench/coverage_draws.R %s %s %d %g %s%s`.%s",
                draws, ntest, paste(format(sizes, scientific = TRUE), collapse = ","), paste(families, collapse = ","),
                draws, ntest, name, if (is.null(kernel)) "" else paste0(" ", kernel),
                if (is.null(kernel)) "" else sprintf(" gpgam with kernel = \"%s\" in every gp() term.", kernel)), "",
        "| family | n | method | mean coverage | se | min | max | draws in 0.93-0.97 | median seconds |",
        "|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %.0e | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.1f |", rows$family, rows$n, rows$method,
                rows$mean, rows$se, rows$min, rows$max, rows$within, rows$seconds),
        "", sprintf("Measured %s on %s, %d cores; mgcv %s.", format(Sys.time(), "%Y-%m-%d"), R.version$platform,
                    parallel::detectCores(), packageVersion("mgcv")))
writeLines(md, file.path("bench", "results", paste0(name, ".md")))
writeLines(md)
