# Bui et al. (2016), Appendix Table 1: binary classification, average test
# log-likelihood (and error rate) of a GP (dgp(hidden = 0)) and a DGP with one
# hidden layer of 2 (dgp(hidden = 2)), probit output, on the six sets of the
# table (loaders in seed001_data.R: Australian from ../shared/data, the others
# from mlbench and MASS).  The paper gives no splits, inducing points or
# iterations for this table; this script uses random 90/10 splits (seed =
# split number), 50 inducing points (at most the training rows), minibatches
# of 50, Adam with learning rate 0.005 and 6000 iterations, the settings of
# its regression tables.  Beside them gpgam(y ~ gp(all inputs), binomial(link
# = "probit")) with the package defaults (not in the paper).
#
#   Rscript inst/replication/seed000_classification.R [sets] [splits] [methods] [output]
#
# Rows are appended to the output (default
# inst/replication/results/seed000_classification.rds) after every fit; a
# (set, split, method) already stored is skipped.  Each row records the
# package version, commit and date that made it (stamp()).
suppressPackageStartupMessages(library(scalegp))
source(file.path("inst", "replication", "seed001_data.R"))
source(file.path("inst", "replication", "stamp.R"))  # stamp()
args <- commandArgs(trailingOnly = TRUE)
sets <- if (length(args) >= 1) strsplit(args[1], ",")[[1]] else c("Australian", "Breast", "Crabs", "Ionosphere", "Pima", "Sonar")
splits <- if (length(args) >= 2) eval(parse(text = args[2])) else 1:5
methods <- if (length(args) >= 3) strsplit(args[3], ",")[[1]] else c("gp", "dgp2", "gpgam")
out <- if (length(args) >= 4) args[4] else file.path("inst", "replication", "results", "seed000_classification.rds")

fit_one <- function(set, k, method) {
  d <- load_set(set)
  set.seed(k)
  te <- sample(nrow(d), round(0.1 * nrow(d)))
  tr <- d[-te, ]
  ts <- d[te, ]
  inputs <- setdiff(names(d), "y")
  keep <- inputs[vapply(tr[inputs], function(v) stats::sd(v) > 0, TRUE)]
  fam <- stats::binomial(link = "probit")
  t0 <- proc.time()[["elapsed"]]
  f <- if (method == "gpgam") {
    gpgam(stats::as.formula(paste("y ~ gp(", paste(keep, collapse = ", "), ")")), data = tr, family = fam,
          control = gp_control(threads = 1, seed = 1, verbose = FALSE))
  } else {
    dgp(stats::as.formula(paste("y ~", paste(keep, collapse = " + "))), data = tr, family = fam,
        hidden = if (method == "gp") 0 else 2, inducing = min(50, nrow(tr)),
        control = gp_control(batch_size = 50, iterations = 6000, learning_rate = 0.005, seed = 123 + k,
                             threads = 1, verbose = FALSE))
  }
  sec <- proc.time()[["elapsed"]] - t0
  p <- pmin(pmax(predict(f, ts, type = "response"), 1e-12), 1 - 1e-12)
  data.frame(set = set, split = k, method = method, n_train = nrow(tr),
             test_ll = mean(ifelse(ts$y == 1, log(p), log(1 - p))), error = mean((p > 0.5) != (ts$y == 1)),
             seconds = sec, stamp(), stringsAsFactors = FALSE)
}

res <- if (file.exists(out)) readRDS(out) else NULL
if (!is.null(res)) for (v in c("commit", "date")) if (is.null(res[[v]])) res[[v]] <- NA_character_  # rows stored before the stamp
for (k in splits) for (set in sets) for (m in methods) {
  if (!is.null(res) && any(res$set == set & res$split == k & res$method == m)) next
  r <- fit_one(set, k, m)
  print(r, digits = 4)
  res <- rbind(res, r)
  saveRDS(res, out)
}
