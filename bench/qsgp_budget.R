# What about 5 minutes of the 2-core machine buy inference = "qsgp" on
# kin40k (issue 35: a user who types only inference = "qsgp" should get a
# fit better than "vi"'s default within about 5 minutes): the defaults
# with `iters` iterations in place of 2000, everything else as a user would
# type it (one gp() term over the 8 inputs, gp()'s default kernel), beside
# "vi" at its defaults.  A fit is bit-identical for any number of threads,
# so the qsgp fit may run on one thread while the machine is busy; its time
# on 2 threads of a quiet machine is iterations x the defaults' seconds per
# iteration in bench/results/qsgp_paper_cost.md.
#   Rscript bench/qsgp_budget.R [iters] [threads]   -> bench/results/qsgp_budget.md
suppressPackageStartupMessages(library(scalegp))
args <- commandArgs(TRUE)
iters <- if (length(args) >= 1) as.integer(args[1]) else 30000L
threads <- if (length(args) >= 2) as.integer(args[2]) else 1L
source(file.path("inst", "replication", "kin40k_data.R"))
split <- read_kin40k(1)
tr <- split$train
te <- split$test
fml <- y ~ gp(x1, x2, x3, x4, x5, x6, x7, x8)
score <- function(label, f, sec) {
  p <- predict(f, te, se.fit = TRUE)
  s <- sqrt(p$se.fit^2 + sigma(f)^2)
  data.frame(fit = label, iterations = f$iterations, threads = f$control$threads, seconds = round(sec, 1),
             test_rmse = round(sqrt(mean((te$y - p$fit)^2)), 4),
             test_mnlp = round(-mean(stats::dnorm(te$y, p$fit, s, log = TRUE)), 4))
}
t <- system.time(fq <- gpgam(fml, data = tr, inference = "qsgp",
                             control = gp_control(iterations = iters, threads = threads, seed = 1,
                                                  verbose = FALSE)))[[3]]
rows <- list(score(sprintf("qsgp, defaults but %d iterations", iters), fq, t))
print(rows[[1]], row.names = FALSE)
t <- system.time(fv <- gpgam(fml, data = tr, control = gp_control(threads = threads, verbose = FALSE)))[[3]]
rows[[2]] <- score("vi, defaults", fv, t)
print(rows[[2]], row.names = FALSE)
out <- c("# qsgp on kin40k with a 5-minute budget (bench/qsgp_budget.R)", "",
         sprintf("`Rscript bench/qsgp_budget.R %d %d`, %s, commit %s, %s, one run each (kin40k split 0).", iters,
                 threads, format(Sys.Date()),
                 tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) "?"),
                 R.version.string), "",
         knitr::kable(do.call(rbind, rows), format = "pipe"))
dir.create("bench/results", showWarnings = FALSE)
writeLines(out, "bench/results/qsgp_budget.md")
cat(out, sep = "\n")
