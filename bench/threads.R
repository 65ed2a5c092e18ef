# Thread scaling of a Gaussian gpgam() fit on the design of bench/gam_vs_mgcv.R
# (gp(x1) + gp(x2) + gp(x3, x4), 1e6 rows): the L-BFGS iterations on 1 and
# 2 threads, interleaved, `reps` times each in one process (this machine's
# timings vary from run to run; medians are reported), and whether the two
# fits are identical.
#   Rscript bench/threads.R [n] [reps]
# Writes bench/results/threads.md.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
n_txt <- if (length(args) >= 1) args[1] else "1e6"
n <- as.numeric(n_txt)
reps <- if (length(args) >= 2) as.integer(args[2]) else 5L
ftrue <- function(d) sin(3 * d$x1) + 0.5 * d$x2^2 + 2 * exp(-(d$x3^2 + d$x4^2))
set.seed(1)
d <- as.data.frame(matrix(runif(4 * n, -2, 2), n, dimnames = list(NULL, paste0("x", 1:4))))
d$y <- ftrue(d) + rnorm(n, sd = 0.3)
res <- NULL
fits <- list()
for (r in seq_len(reps)) for (th in 1:2) {
  fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d,
               control = gp_control(threads = th, seed = 1, verbose = FALSE))
  res <- rbind(res, data.frame(rep = r, threads = th, iterations = fit$timing[["iterations"]],
                               fit = fit$timing[["fit"]]))
  fits[[th]] <- fit
}
print(res)
med <- function(v) tapply(v, res$threads, median)
it <- med(res$iterations); ft <- med(res$fit)
same <- identical(fits[[1]]$elbo, fits[[2]]$elbo) && identical(fits[[1]]$fitted.values, fits[[2]]$fitted.values)
md <- c(sprintf("# Thread scaling: Gaussian gpgam() fit, %s rows", n_txt), "",
        sprintf("`Rscript bench/threads.R %s %d`, %s, %s, %d cores. Medians of %d interleaved runs in one process.",
                n_txt, reps, format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(), reps), "",
        "| threads | L-BFGS iterations (s) | engine fit (s) | runs (iterations, s) |", "|---|---|---|---|",
        sprintf("| %d | %.2f | %.2f | %s |", 1:2, it, ft,
                sapply(1:2, function(t) paste(sprintf("%.2f", res$iterations[res$threads == t]), collapse = ", "))),
        "", sprintf("Speed-up from 1 to 2 threads: %.2fx on the iterations, %.2fx on the engine fit. ELBO and fitted values identical on 1 and 2 threads: %s.",
                    it[1] / it[2], ft[1] / ft[2], same))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(md, file.path("bench", "results", "threads.md"))
writeLines(md)
