# dgp() on data larger than it holds: a CSV file of n rows read in chunks
# (chunked_csv()) against the same fit with the whole data frame in memory,
# each in its own R process so that the peak memory (VmHWM of
# /proc/self/status, the process's resident high-water mark) is its own.
# Synthetic data: 6 uniform inputs on [-2, 2], y = sin(2 x1) x2 + sign(x3)
# + 0.5 x4^2 + N(0, 0.1^2) (x5, x6 irrelevant); one hidden layer of 2,
# M = 50, batch 50, Adam 0.005, one epoch (n / 50 steps), one thread, seeds
# 1 to `seeds` (one epoch is far from converged: the fit varies with the
# seed as much as between the two modes).  Test log-likelihood and RMSE on
# 10000 fresh rows.
#
#   Rscript bench/dgp_chunks.R [n] [rows per chunk] [seeds]   (writes bench/results/dgp_chunks.md)
args <- commandArgs(trailingOnly = TRUE)
if (length(args) >= 1 && args[1] == "worker") {
  suppressPackageStartupMessages(library(scalegp))
  mode <- args[2]; csv <- args[3]; chunk <- as.numeric(args[4]); out <- args[5]
  n <- as.numeric(args[6]); seed <- as.integer(args[7])
  ctl <- gp_control(batch_size = 50, epochs = 1, learning_rate = 0.005, seed = seed, threads = 1, verbose = FALSE)
  t0 <- proc.time()[["elapsed"]]
  fit <- if (mode == "chunks") dgp(y ~ ., data = chunked_csv(csv, rows = chunk), hidden = 2, inducing = 50, control = ctl)
         else dgp(y ~ ., data = utils::read.csv(csv), hidden = 2, inducing = 50, control = ctl, model = FALSE)
  secs <- proc.time()[["elapsed"]] - t0
  te <- readRDS(sub("\\.csv$", "_test.rds", csv))
  p <- predict(fit, te, type = "response", se.fit = TRUE)
  hwm <- grep("^VmHWM", readLines("/proc/self/status"), value = TRUE)
  saveRDS(data.frame(data = if (mode == "chunks") sprintf("CSV read in chunks of %s rows", format(chunk, big.mark = ",", scientific = FALSE))
                            else "read.csv(), whole data frame",
                     n = n, seed = seed, steps = fit$iterations, seconds = secs, fit_seconds = fit$timing[["fit"]],
                     ms_per_step = 1000 * fit$timing[["per_iteration"]],
                     peak_MB = as.numeric(gsub("[^0-9]", "", hwm)) / 1024,
                     test_ll = mean(stats::dnorm(te$y, p$fit, sqrt(p$se.fit^2 + sigma(fit)^2), log = TRUE)),
                     rmse = sqrt(mean((te$y - p$fit)^2))), out)
  quit(save = "no")
}
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e6
chunk <- if (length(args) >= 2) as.numeric(args[2]) else 1e5
seeds <- if (length(args) >= 3) as.integer(args[3]) else 3L
simulate <- function(n) {
  X <- matrix(stats::runif(6 * n, -2, 2), n, 6, dimnames = list(NULL, paste0("x", 1:6)))
  d <- as.data.frame(round(X, 6))
  d$y <- round(sin(2 * d$x1) * d$x2 + sign(d$x3) + 0.5 * d$x4^2 + stats::rnorm(n, sd = 0.1), 6)
  d
}
set.seed(1)
csv <- file.path(tempdir(), "dgp_chunks.csv")
utils::write.csv(simulate(n), csv, row.names = FALSE)
saveRDS(simulate(1e4), sub("\\.csv$", "_test.rds", csv))
cat(sprintf("%s rows, %.0f MB of CSV\n", format(n, big.mark = ","), file.size(csv) / 2^20))
rows <- list()
for (seed in seq_len(seeds)) for (mode in c("chunks", "memory")) {
  out <- tempfile(fileext = ".rds")
  system2(file.path(R.home("bin"), "Rscript"), c("bench/dgp_chunks.R", "worker", mode, csv, chunk, out, n, seed))
  rows[[length(rows) + 1]] <- readRDS(out)
  print(rows[[length(rows)]], digits = 4)
}
tab <- do.call(rbind, rows)
dir.create(file.path("bench", "results"), showWarnings = FALSE)
con <- file(file.path("bench", "results", "dgp_chunks.md"), "w")
writeLines(c("# dgp() on a CSV file read in chunks against the whole data frame in memory", "",
             sprintf("`Rscript bench/dgp_chunks.R %s %s %d`, %s, scalegp %s (commit %s). Peak memory: VmHWM of each R process.",
                     format(n, scientific = FALSE), format(chunk, scientific = FALSE), seeds, format(Sys.Date()),
                     utils::packageVersion("scalegp"),
                     tryCatch(system2("git", c("rev-parse", "--short", "HEAD"), stdout = TRUE), error = function(e) "?")),
             sprintf("CSV file: %.0f MB. One hidden layer of 2, M = 50, batch 50, one epoch, one thread.", file.size(csv) / 2^20),
             "", "| data | n | seed | Adam steps | seconds (all) | seconds (fit) | ms per step | peak MB | test log-lik | test RMSE |",
             "|---|---|---|---|---|---|---|---|---|---|",
             sprintf("| %s | %s | %d | %d | %.1f | %.1f | %.2f | %.0f | %.3f | %.4f |", tab$data, format(tab$n, big.mark = ",", scientific = FALSE),
                     tab$seed, tab$steps, tab$seconds, tab$fit_seconds, tab$ms_per_step, tab$peak_MB, tab$test_ll, tab$rmse),
             "", "Medians over the seeds:", "",
             "| data | seconds (fit) | peak MB | test log-lik | test RMSE |", "|---|---|---|---|---|",
             vapply(split(tab, tab$data), function(t)
               sprintf("| %s | %.1f | %.0f | %.3f | %.4f |", t$data[1], stats::median(t$fit_seconds),
                       stats::median(t$peak_MB), stats::median(t$test_ll), stats::median(t$rmse)), "")), con)
close(con)
unlink(c(csv, sub("\\.csv$", "_test.rds", csv)))
