# Per-term calibration of a Gaussian gpgam() fit on the design of
# bench/gam_vs_mgcv.R (the same data and test rows for a given n): for each
# gp() term, the share of 20 000 test rows whose 95% band covers the term's
# truth (centred over the rows of the data, as the terms are), the term's
# root-mean-square error and its root-mean-square posterior sd; and the same
# coverage for the whole latent function; for inducing-point terms also the
# coverage of f from the basis's posterior variance alone (predict()'s
# variance without the prior's residual K** - Q** beyond the inducing points,
# attr(, "nonbasis.var") of the lpmatrix) and the median share of that
# residual in predict()'s variance.
#   Rscript bench/term_coverage.R [n] [k of gp(x3, x4)] [basis] [draws]
# basis: "default" (the package default) or "hilbert" (every term); draws:
# data sets (seeds n + 8, n + 9, ...; the first is bench/gam_vs_mgcv.R's).
# Prints one line per draw and appends them to bench/results/term_coverage.md.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
k2 <- if (length(args) >= 2 && args[2] != "default") as.integer(args[2]) else NA_integer_
basis <- if (length(args) >= 3) match.arg(args[3], c("default", "hilbert")) else "default"
draws <- if (length(args) >= 4) as.integer(args[4]) else 1L
source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
b <- if (basis == "hilbert") ", basis = \"hilbert\"" else ""
form <- as.formula(sprintf("y ~ gp(x1%s) + gp(x2%s) + gp(x3, x4%s%s)", b, b, b,
                           if (is.na(k2)) "" else sprintf(", k = %d", k2)))
out <- file.path("bench", "results", "term_coverage.md")
if (!file.exists(out))
  cat("# Per-term calibration on the design of bench/gam_vs_mgcv.R (Gaussian; `Rscript bench/term_coverage.R`)\n\n",
      "Coverage of 95% bands on 20 000 test rows; f: the latent function; terms centred over the data's rows;\n",
      "basis only: predict()'s variance without the inducing points' residual; residual share: its median share of\n",
      "predict()'s variance; z sd: sd of (truth - fit) / se.fit for f (1 when calibrated).\n\n",
      "| n | draw | model | seconds (2 threads) | coverage f | basis only | residual share | z sd | term coverage | term RMSE | date, commit |\n",
      "|---|---|---|---|---|---|---|---|---|---|---|\n", file = out, sep = "")
commit <- tryCatch(system2("git", c("rev-parse", "--short", "HEAD"), stdout = TRUE), error = function(e) "?")
for (draw in seq_len(draws)) {
  set.seed(n + nchar("gaussian") + draw - 1)  # (draw 1: as bench/gam_vs_mgcv.R)
  d <- gen(n)
  test <- gen(20000)
  secs <- system.time(fit <- gpgam(form, data = d, control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[[3]]
  p <- predict(fit, test, se.fit = TRUE)
  pt <- predict(fit, test, type = "terms", se.fit = TRUE)
  truth <- list(sin(3 * test$x1) - mean(sin(3 * d$x1)), 0.5 * test$x2^2 - mean(0.5 * d$x2^2),
                2 * exp(-(test$x3^2 + test$x4^2)) - mean(2 * exp(-(d$x3^2 + d$x4^2))))
  cover <- vapply(1:3, function(j) mean(abs(pt$fit[, j] - truth[[j]]) <= 1.96 * pt$se.fit[, j]), 0)
  rmse <- vapply(1:3, function(j) sqrt(mean((pt$fit[, j] - truth[[j]])^2)), 0)
  rms_se <- vapply(1:3, function(j) sqrt(mean(pt$se.fit[, j]^2)), 0)
  Xp <- predict(fit, test, type = "lpmatrix")
  resid <- attr(Xp, "nonbasis.var")
  if (is.null(resid)) resid <- 0 * p$se.fit
  e <- test$truth - p$fit
  cover_f <- mean(abs(e) <= 1.96 * p$se.fit)
  cover_basis <- mean(abs(e) <= 1.96 * sqrt(pmax(p$se.fit^2 - resid, 0)))
  share <- stats::median(resid / p$se.fit^2)
  cat(sprintf("n %g, draw %d, %s: %.1f s; coverage of f %.3f (basis only %.3f; residual share %.2f; z sd %.2f); per term (%s): coverage %s, rmse %s, rms sd %s, edf %s\n",
              n, draw, deparse1(form), secs, cover_f, cover_basis, share, stats::sd(e / p$se.fit),
              paste(colnames(pt$fit)[1:3], collapse = ", "), paste(round(cover, 3), collapse = " "),
              paste(signif(rmse, 3), collapse = " "), paste(signif(rms_se, 3), collapse = " "),
              paste(round(summary(fit)$s.table[, 1], 1), collapse = " ")))
  cat(sprintf("| %g | %d | `%s` | %.1f | %.3f | %.3f | %.2f | %.2f | %s | %s | %s, %s |\n", n, draw, deparse1(form[[3]]),
              secs, cover_f, cover_basis, share, stats::sd(e / p$se.fit), paste(sprintf("%.3f", cover), collapse = " / "),
              paste(sprintf("%.4f", rmse), collapse = " / "), format(Sys.Date()), commit), file = out, append = TRUE)
}
