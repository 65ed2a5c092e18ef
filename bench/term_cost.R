# Where the time of a discretised Gaussian gpgam() fit goes, term by term, on
# the design of bench/gam_vs_mgcv.R, beside mgcv::bam(discrete = TRUE,
# nthreads = 2) fitting the same terms:
#   the two one-input terms alone (gp(x1) + gp(x2) | s(x1) + s(x2)),
#   the two-input term alone (gp(x3, x4) | te(x3, x4)),
#   all three (the benchmark's model);
# on 1 and 2 threads, medians of `reps` fits; then, at the first size, the
# benchmark's model with fewer inducing points for gp(x3, x4) (k), with test
# NLPD and 95% coverage of f on 20 000 fresh rows.
#   Rscript bench/term_cost.R [sizes, e.g. 1e5,1e6] [reps]
# Writes bench/results/term_cost.md.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
sizes_txt <- if (length(args) >= 1) strsplit(args[1], ",")[[1]] else c("1e5", "1e6")
reps <- if (length(args) >= 2) as.integer(args[2]) else 3L
source(file.path("bench", "gam_design.R"))  # ftrue(), gen(), score()
set.seed(2026)
fbar <- mean(ftrue(gen(1e6, "gaussian", 0)))
forms <- list("gp(x1) + gp(x2)" = y ~ gp(x1) + gp(x2), "gp(x3, x4)" = y ~ gp(x3, x4),
              "gp(x1) + gp(x2) + gp(x3, x4)" = y ~ gp(x1) + gp(x2) + gp(x3, x4))
bforms <- list(y ~ s(x1) + s(x2), y ~ te(x3, x4), y ~ s(x1) + s(x2) + te(x3, x4))
rows <- NULL
for (n_txt in sizes_txt) {
  n <- as.numeric(n_txt)
  set.seed(n + nchar("gaussian"))  # the data of bench/gam_vs_mgcv.R
  d <- gen(n, "gaussian", fbar)
  for (j in seq_along(forms)) {
    tb <- median(replicate(reps, system.time(bam(bforms[[j]], data = d, discrete = TRUE, nthreads = 2))[["elapsed"]]))
    for (th in 1:2) {
      r <- vapply(seq_len(reps), function(i) {
        t <- system.time(f <- gpgam(forms[[j]], data = d, control = gp_control(threads = th, seed = 1, verbose = FALSE)))
        c(t[["elapsed"]], f$timing[["init"]], f$timing[["iterations"]], f$evaluations)
      }, numeric(4))
      rows <- rbind(rows, data.frame(n = n_txt, model = names(forms)[j], threads = th, seconds = median(r[1, ]),
                                     init = median(r[2, ]), iterations = median(r[3, ]), evaluations = r[4, 1],
                                     ms_per_evaluation = 1000 * median(r[3, ] / r[4, ]), bam = tb))
      print(rows[nrow(rows), ])
    }
  }
}
# fewer inducing points for gp(x3, x4), first size, 2 threads
n <- as.numeric(sizes_txt[1])
set.seed(n + nchar("gaussian"))
d <- gen(n, "gaussian", fbar)
test <- gen(20000, "gaussian", fbar)
tb <- system.time(b <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, discrete = TRUE, nthreads = 2))[["elapsed"]]
pb <- predict(b, test, se.fit = TRUE)
krows <- cbind(score("bam", "gaussian", n, tb, pb$fit, pb$se.fit, sqrt(b$sig2), test), edf = sum(b$edf[-1]))
for (k in c(25, 36, 49, 64)) {
  t <- system.time(f <- gpgam(as.formula(sprintf("y ~ gp(x1) + gp(x2) + gp(x3, x4, k = %d)", k)), data = d,
                              control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
  p <- predict(f, test, se.fit = TRUE)
  krows <- rbind(krows, cbind(score(sprintf("gpgam, gp(x3, x4, k = %d)%s", k, if (k == 64) " (default)" else ""),
                                    "gaussian", n, t, p$fit, p$se.fit, sigma(f), test),
                              edf = sum(vapply(f$params$gp, `[[`, 1, "edf"))))
  print(krows[nrow(krows), ])
}
md <- c("# Where a discretised Gaussian fit spends its time, term by term", "",
        sprintf("`Rscript bench/term_cost.R %s %d`, %s, %s, %d cores; mgcv %s.  Design of bench/gam_vs_mgcv.R (Gaussian); medians of %d fits; bam: `bam(discrete = TRUE, nthreads = 2)` on the same terms (s() for a one-input gp(), te() for gp(x3, x4)).",
                paste(sizes_txt, collapse = ","), reps, format(Sys.time(), "%Y-%m-%d"), R.version$platform,
                parallel::detectCores(), packageVersion("mgcv"), reps), "",
        "| rows | gpgam terms | threads | gpgam s | setup and start s | L-BFGS s | evaluations | ms per evaluation | bam s (2 threads) |",
        "|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %s | %d | %.2f | %.2f | %.2f | %d | %.1f | %.2f |", rows$n, rows$model, rows$threads, rows$seconds,
                rows$init, rows$iterations, as.integer(rows$evaluations), rows$ms_per_evaluation, rows$bam), "",
        sprintf("The benchmark's model at %s rows with fewer inducing points for gp(x3, x4) (2 threads; test NLPD and 95%% coverage of f on 20 000 fresh rows; edf: sum over the smooth terms):", sizes_txt[1]), "",
        "| method | seconds | test NLPD | coverage f | edf |", "|---|---|---|---|---|",
        sprintf("| %s | %.2f | %.4f | %.3f | %.1f |", krows$method, krows$seconds, krows$nlpd, krows$cover_f, krows$edf))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(md, file.path("bench", "results", "term_cost.md"))
writeLines(md)
