# Scaling of gpgam(inference = "vi") with the number of rows: fit time, time
# per iteration, and time of the final full-data passes (exact natural step,
# ELBO, fitted values), for N = 1e4, 1e5, 1e6, D = 8, M = 100 and 500.
# A fixed number of iterations (200) so that times are comparable; minibatches
# of 2000 rows above 20 000 rows (the default), full batches below.
#   Rscript bench/scaling.R [threads] [largest N for M = 500]
# Writes bench/results/scaling.md.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
threads <- if (length(args)) as.integer(args[1]) else 2L
max_n_500 <- if (length(args) >= 2) as.numeric(args[2]) else 1e6
gen <- function(n) {
  X <- matrix(runif(n * 8), n, dimnames = list(NULL, paste0("x", 1:8)))
  data.frame(X, y = sin(3 * X[, 1]) + X[, 2]^2 + 2 * X[, 3] * X[, 4] + rnorm(n, sd = 0.1))
}
f <- y ~ gp(x1, x2, x3, x4, x5, x6, x7, x8)
rows <- NULL
for (n in c(1e4, 1e5, 1e6)) {
  set.seed(1)
  d <- gen(n)
  for (M in c(100, 500)) {
    if (M == 500 && n > max_n_500) next
    ctl <- gp_control(inducing = M, iterations = 200, tol = 1e-12, threads = threads, seed = 1, verbose = FALSE)
    total <- system.time(fit <- gpgam(f, data = d, control = ctl))[["elapsed"]]
    tm <- fit$timing
    rows <- rbind(rows, data.frame(N = n, M = M, batch = fit$control$batch_size, total_s = total,
                                   per_iteration_ms = 1e3 * tm[["per_iteration"]], final_s = tm[["final"]],
                                   memory_mb = sum(gc()[, 2])))
    print(rows[nrow(rows), ])
  }
}
md <- c(sprintf("200 iterations, D = 8, %d threads; `final` = the full-data passes after the iterations.", threads), "",
        "| N | M | batch | fit time (s) | per iteration (ms) | final passes (s) |", "|---|---|---|---|---|---|",
        sprintf("| %.0e | %d | %d | %.1f | %.1f | %.1f |", rows$N, rows$M, rows$batch, rows$total_s,
                rows$per_iteration_ms, rows$final_s),
        "", sprintf("Measured %s on %s.", format(Sys.time(), "%Y-%m-%d"), R.version$platform))
writeLines(md, file.path("bench", "results", "scaling.md"))
writeLines(md)
