# Time per iteration of gpgam(inference = "qsgp") against the number of rows
# n and the number of random features m (Evans and Nair 2018 claim a cost per
# iteration independent of both).  Gaussian response, one gp() term over 4
# inputs: x ~ U(-2, 2)^4, y = sin(3 x1) + 0.5 x2^2 + 2 exp(-(x3^2 + x4^2))
# + N(0, 0.3^2).  Fixed per iteration: batch_size = 500 rows and
# feature_batch = 512 features (sampled twice); threads = 1.
#   (a) n = 1e4, 1e5, 1e6 at m = 2048 features (the package default);
#   (b) m = 1e4, 1e5, 1e6 at n = 1000 rows.
# Each configuration runs in a fresh Rscript (for its peak resident memory,
# VmHWM of /proc/self/status) and fits once with `iterations` iterations.
# The time of every iteration is recorded by a monitor that replaces the
# package's progress bar (the engine calls it once per iteration; a call
# costs microseconds), so the table gives the median and quartiles over
# iterations; fit$timing gives the phases: "init" (the Proposition 1 start
# of the standard deviations, O(2000 rows x m)), "iterations", and "final",
# the exact pass over all rows and features after the iterations
# (O(n x m x inputs), not chunked beyond row groups, and not skippable), which
# is reported separately.
#   Rscript bench/qsgp_scaling.R [iterations] [extra "n:m" configurations...]
# e.g. Rscript bench/qsgp_scaling.R 200; Rscript bench/qsgp_scaling.R 200 1e7:2048
# Writes bench/results/qsgp_scaling.md.
args <- commandArgs(TRUE)
if (length(args) >= 1 && args[1] == "--one") {
  # child: one configuration
  suppressMessages(library(scalegp))
  n <- as.numeric(args[2]); m <- as.numeric(args[3]); iters <- as.integer(args[4])
  stamps <- numeric(iters + 1)
  utils::assignInNamespace("progress_monitor", function(control, label, shift = 0, envir = parent.frame()) {
    function(it, obj) {
      stamps[it + 1] <<- proc.time()[["elapsed"]]
      TRUE
    }
  }, "scalegp")
  set.seed(1)
  d <- data.frame(x1 = runif(n, -2, 2), x2 = runif(n, -2, 2), x3 = runif(n, -2, 2), x4 = runif(n, -2, 2))
  d$y <- sin(3 * d$x1) + 0.5 * d$x2^2 + 2 * exp(-(d$x3^2 + d$x4^2)) + rnorm(n, sd = 0.3)
  ctl <- gp_control(features = m, feature_batch = 512, batch_size = 500, iterations = iters, threads = 1,
                    seed = 1, verbose = FALSE)
  t0 <- proc.time()[["elapsed"]]
  fit <- gpgam(y ~ gp(x1, x2, x3, x4), data = d, inference = "qsgp", control = ctl)
  total <- proc.time()[["elapsed"]] - t0
  per <- diff(stamps)[-1]  # iterations 2..iters (the first has no start stamp)
  st <- readLines("/proc/self/status")
  hwm <- as.numeric(gsub("[^0-9]", "", grep("^VmHWM", st, value = TRUE))) / 1024
  q <- stats::quantile(per, c(0.25, 0.5, 0.75)) * 1000
  cat(sprintf("RESULT %g %g %d %.4f %.4f %.4f %.4f %.2f %.2f %.2f %.2f %.0f\n", n, m, iters, q[1], q[2], q[3],
              1000 * fit$timing[["per_iteration"]], fit$timing[["init"]], fit$timing[["iterations"]],
              fit$timing[["final"]], total, hwm))
  quit(save = "no")
}
iters <- if (length(args) >= 1) as.integer(args[1]) else 200L
extra <- if (length(args) >= 2) strsplit(args[-1], ":") else list()
configs <- c(list(c("a", 1e4, 2048), c("a", 1e5, 2048), c("a", 1e6, 2048),
                  c("b", 1000, 1e4), c("b", 1000, 1e5), c("b", 1000, 1e6)),
             lapply(extra, function(e) c(if (as.numeric(e[2]) == 2048) "a" else "b", e)))
out <- list()
for (cf in configs) {
  cat(sprintf("axis %s: n = %g, m = %g ... ", cf[1], as.numeric(cf[2]), as.numeric(cf[3])))
  r <- system2(file.path(R.home("bin"), "Rscript"), c("bench/qsgp_scaling.R", "--one", cf[2], cf[3], iters),
               stdout = TRUE, stderr = TRUE)
  line <- grep("^RESULT", r, value = TRUE)
  if (!length(line)) {
    cat("failed:\n", tail(r, 5), sep = "\n")
    out[[length(out) + 1]] <- data.frame(axis = cf[1], n = as.numeric(cf[2]), m = as.numeric(cf[3]), iters = iters,
                                         q1 = NA, med = NA, q3 = NA, mean = NA, init = NA, it = NA, final = NA,
                                         total = NA, hwm = NA)
    next
  }
  v <- as.numeric(strsplit(sub("^RESULT ", "", line), " ")[[1]])
  out[[length(out) + 1]] <- data.frame(axis = cf[1], n = v[1], m = v[2], iters = v[3], q1 = v[4], med = v[5],
                                       q3 = v[6], mean = v[7], init = v[8], it = v[9], final = v[10], total = v[11],
                                       hwm = v[12])
  cat(line, "\n")
}
res <- do.call(rbind, out)
fmt <- function(v, d) ifelse(is.na(v), "failed", formatC(v, format = "f", digits = d))
ratio <- function(a) {
  x <- res$med[res$axis == a]
  sprintf("%.2f at the largest over the smallest; %.2f largest over smallest of all rows",
          x[length(x)] / x[1], max(x, na.rm = TRUE) / min(x, na.rm = TRUE))
}
tab <- function(a) {
  r <- res[res$axis == a, ]
  c("| n | features m | median ms per iteration (quartiles) | mean ms per iteration | init s | iterations s | final pass s | whole gpgam() s | peak memory MB |",
    "|---|---|---|---|---|---|---|---|---|",
    sprintf("| %s | %s | %s (%s-%s) | %s | %s | %s | %s | %s | %s |", format(r$n, scientific = TRUE),
            format(r$m, scientific = FALSE, big.mark = ","), fmt(r$med, 2), fmt(r$q1, 2), fmt(r$q3, 2),
            fmt(r$mean, 2), fmt(r$init, 2), fmt(r$it, 2), fmt(r$final, 2), fmt(r$total, 1), fmt(r$hwm, 0)))
}
lines <- c("# qsgp: time per iteration against rows n and features m",
           "",
           sprintf("`Rscript bench/qsgp_scaling.R %s`, scalegp commit %s, %s. Gaussian, `y ~ gp(x1, x2, x3, x4)`,",
                   paste(args, collapse = " "),
                   tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) "?"),
                   format(Sys.time(), "%Y-%m-%d")),
           sprintf("batch_size = 500, feature_batch = 512, %d iterations, threads = 1, one fresh Rscript per row.", iters),
           "Per-iteration times are over iterations 2 to the last of one fit (a monitor stamps each iteration);",
           "`init`, `iterations`, `final pass` are the phases of fit$timing; peak memory is the process's VmHWM.",
           "The machine was shared with two other jobs (2 cores): times are noisy.",
           "", "(a) against n at m = 2048 features", "", tab("a"),
           "", sprintf("Median time per iteration along n: %s.", ratio("a")),
           "", "(b) against m at n = 1000 rows", "", tab("b"),
           "", sprintf("Median time per iteration along m: %s.", ratio("b")))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(lines, file.path("bench", "results", "qsgp_scaling.md"))
cat(lines, sep = "\n")
