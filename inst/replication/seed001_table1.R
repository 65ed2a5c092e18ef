# Seed 001, Table 1: probit GP classification by EP (our "SEP") and by our
# variational engine (the paper's SVI baseline) on the paper's seven data
# sets, m = 15%, 25% and 50% of the training rows as inducing points, random
# 90/10 splits, 250 iterations of batch training, SE-ARD kernel.  Test
# negative log-likelihood, test error and training time per fit.
#
#   Rscript inst/replication/seed001_table1.R [splits] [first split] [datasets] [threads] [output]
#
# Results are saved to the output file (default
# inst/replication/results/seed001_table1.rds; rows already there are kept)
# after every split; the loop is split-major, so a partial run covers every
# data set.  Runs over different splits can go to different files and be
# combined with rbind().  Each row records the package version, commit and
# date that made it (stamp()).
library(scalegp)
args <- commandArgs(trailingOnly = TRUE)
splits <- if (length(args) >= 1) as.integer(args[1]) else 20L
first <- if (length(args) >= 2) as.integer(args[2]) else 1L
sets <- if (length(args) >= 3 && args[3] != "all") strsplit(args[3], ",")[[1]] else
  c("Australian", "Breast", "Crabs", "Heart", "Ionosphere", "Pima", "Sonar")
threads <- if (length(args) >= 4) as.integer(args[4]) else NULL
out <- if (length(args) >= 5) args[5] else file.path("inst", "replication", "results", "seed001_table1.rds")

source(file.path("inst", "replication", "seed001_data.R"))  # load_set(), gp_formula()
source(file.path("inst", "replication", "stamp.R"))  # stamp()

fit_one <- function(d, tr, m, inference, seed) {
  fo <- gp_formula(d)
  M <- round(m * length(tr))
  t0 <- proc.time()[["elapsed"]]
  f <- gpgam(fo, data = d[tr, ], family = stats::binomial("probit"), inference = inference,
             control = gp_control(inducing = M, iterations = 250, seed = seed, threads = threads, verbose = FALSE,
                                  optimizer = "adam", priors = FALSE,
                                  learn_inducing = if (inference == "ep") TRUE))
  time <- proc.time()[["elapsed"]] - t0
  p <- predict(f, d[-tr, ], type = "response")
  y <- d$y[-tr]
  data.frame(nll = -mean(ifelse(y == 1, log(p), log1p(-p))), error = mean((p > 0.5) != (y == 1)), time = time,
             iterations = f$iterations, M = M, n_train = length(tr), stamp(), stringsAsFactors = FALSE)
}

data_sets <- lapply(stats::setNames(sets, sets), load_set)
res <- if (file.exists(out)) readRDS(out) else NULL
if (!is.null(res)) for (v in c("version", "commit", "date")) if (is.null(res[[v]])) res[[v]] <- NA_character_  # rows stored before the stamp
for (s in seq(first, length.out = splits)) {
  for (name in sets) {
    d <- data_sets[[name]]
    set.seed(s)
    tr <- sample(nrow(d), round(0.9 * nrow(d)))
    for (m in c(0.15, 0.25, 0.5)) for (inference in c("ep", "vi")) {
      r <- cbind(data.frame(dataset = name, split = s, m = m, method = inference), fit_one(d, tr, m, inference, s))
      res <- rbind(res[!(res$dataset == name & res$split == s & res$m == m & res$method == inference), , drop = FALSE], r)
      cat(sprintf("%-10s split %2d m %.2f %-2s  NLL %.3f  err %.3f  %6.2f s  (%d it)\n", name, s, m, inference,
                  r$nll, r$error, r$time, r$iterations))
    }
  }
  attr(res, "session") <- utils::sessionInfo()$R.version$version.string
  saveRDS(res, out)
}
