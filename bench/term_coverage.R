# Per-term calibration of a Gaussian gpgam() fit on the design of
# bench/gam_vs_mgcv.R (the same data and test rows for a given n): for each
# gp() term, the share of 20 000 test rows whose 95% band covers the term's
# truth (centred over the rows of the data, as the terms are), the term's
# root-mean-square error and its root-mean-square posterior sd; and the same
# coverage for the whole latent function.
#   Rscript bench/term_coverage.R [n] [k of gp(x3, x4)]
# Prints one line; writes nothing.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
k2 <- if (length(args) >= 2) as.integer(args[2]) else NA_integer_
source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
set.seed(n + nchar("gaussian"))  # as bench/gam_vs_mgcv.R
d <- gen(n)
test <- gen(20000)
form <- if (is.na(k2)) y ~ gp(x1) + gp(x2) + gp(x3, x4) else
  as.formula(sprintf("y ~ gp(x1) + gp(x2) + gp(x3, x4, k = %d)", k2))
secs <- system.time(fit <- gpgam(form, data = d, control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[[3]]
p <- predict(fit, test, se.fit = TRUE)
pt <- predict(fit, test, type = "terms", se.fit = TRUE)
truth <- list(sin(3 * test$x1) - mean(sin(3 * d$x1)), 0.5 * test$x2^2 - mean(0.5 * d$x2^2),
              2 * exp(-(test$x3^2 + test$x4^2)) - mean(2 * exp(-(d$x3^2 + d$x4^2))))
cover <- vapply(1:3, function(j) mean(abs(pt$fit[, j] - truth[[j]]) <= 1.96 * pt$se.fit[, j]), 0)
rmse <- vapply(1:3, function(j) sqrt(mean((pt$fit[, j] - truth[[j]])^2)), 0)
rms_se <- vapply(1:3, function(j) sqrt(mean(pt$se.fit[, j]^2)), 0)
cat(sprintf("n %g, k of gp(x3, x4) %s: %.1f s; coverage of f %.3f; per term (%s): coverage %s, rmse %s, rms sd %s, edf %s\n",
            n, if (is.na(k2)) "default" else k2, secs, mean(abs(test$truth - p$fit) <= 1.96 * p$se.fit),
            paste(colnames(pt$fit)[1:3], collapse = ", "), paste(round(cover, 3), collapse = " "),
            paste(signif(rmse, 3), collapse = " "), paste(signif(rms_se, 3), collapse = " "),
            paste(round(summary(fit)$s.table[, 1], 1), collapse = " ")))
