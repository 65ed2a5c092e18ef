# Training time of batch EP on seed 001's Table 1 data sets (split 1, the
# protocol of inst/replication/seed001_table1.R) with a given number of
# threads, beside the paper's "Avg. Time" row for SEP (its R code).  Run it
# against the default build and against a native one
# (SCALEGP_NATIVE=1 R CMD INSTALL .) to see what the hardware allows.
#
#   Rscript bench/ep_time.R [threads] [label]
library(scalegp)
args <- commandArgs(trailingOnly = TRUE)
threads <- if (length(args) >= 1) as.integer(args[1]) else RcppParallel::defaultNumThreads()
label <- if (length(args) >= 2) args[2] else "default build"
source(file.path("inst", "replication", "seed001_data.R"))  # load_set(), gp_formula()
sets <- c("Australian", "Breast", "Crabs", "Heart", "Ionosphere", "Pima", "Sonar")
paper <- c(`0.15` = 17, `0.25` = 37, `0.5` = 130)
res <- NULL
for (name in sets) {
  d <- load_set(name)
  set.seed(1)
  tr <- sample(nrow(d), round(0.9 * nrow(d)))
  fo <- gp_formula(d)
  for (m in c(0.15, 0.25, 0.5)) {
    t0 <- proc.time()[["elapsed"]]
    gpgam(fo, data = d[tr, ], family = stats::binomial("probit"), inference = "ep",
          control = gp_control(inducing = round(m * length(tr)), iterations = 250, seed = 1, threads = threads,
                               verbose = FALSE, optimizer = "adam", learn_inducing = TRUE, priors = FALSE))
    res <- rbind(res, data.frame(dataset = name, m = m, time = proc.time()[["elapsed"]] - t0))
  }
}
avg <- tapply(res$time, res$m, mean)
md <- c(sprintf("### Batch EP, %s, %d thread(s) (`Rscript bench/ep_time.R %d`), %s", label, threads, threads,
                format(Sys.time(), "%Y-%m-%d")), "",
        "| m | mean time over the 7 data sets (s) | paper SEP (s) | paper / ours |", "|---|---|---|---|",
        sprintf("| %g%% | %.2f | %g | %.1f |", 100 * as.numeric(names(avg)), avg, paper[names(avg)],
                paper[names(avg)] / avg))
cat(md, sep = "\n")
dir.create(file.path("bench", "results"), showWarnings = FALSE)
cat(md, "", sep = "\n", file = file.path("bench", "results", "ep_time.md"), append = TRUE)
