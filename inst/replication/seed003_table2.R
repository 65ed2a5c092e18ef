# Evans and Nair (2018), Table 2, kin40k row, first split only: test RMSE and
# MNLP (mean negative log predictive density, Gaussian predictive with the
# noise) on the original scale of y, for
#   qsgp0     inference = "qsgp" (mean field, the paper's QSGP-0), SE-ARD random
#             Fourier features, `features` features (the paper: 1e5),
#             `feature_batch` sampled twice per iteration (the paper: 1e4),
#             minibatches of 500 rows (the paper's), `iterations` iterations
#             (the paper: 1e5 on a GPU), the control variate on 500 support
#             rows (the default; the paper's n_bar = 500), hyperparameters
#             starting at a pilot "vi" fit of 1000 rows (qsgp_options(pilot);
#             the paper: an exact GP on 1000 rows)
#   qsgp100   as qsgp0 with the chevron covariance of 100 dense columns (the
#             paper's QSGP-100), a control variate on the mean and on each
#             dense column (the paper's 101)
#   qsgp_default  gpgam(y ~ gp(x1, ..., x8, kernel = "se"), inference = "qsgp")
#             and nothing else but threads = 1, verbose = FALSE (2048 features,
#             512 sampled, 2000 iterations of 500 rows)
#   qsgp_chevron  the same with covariance = "chevron" (20 dense columns)
#   qsgp_inducing  the paper's Table 3 variant: qsgp_options(basis =
#             "inducing"), inducing points at all training rows, the pilot's
#             hyperparameters fixed, mean field, with its Table 3 sizes:
#             feature_batch = batch_size = 3000, control variate on 200
#             support rows, `iterations` iterations
# Every column uses the paper's squared exponential kernel (gp()'s default is
# Matern 5/2).
#   svgp      inference = "vi" with M = 512 inducing points (the paper's SVGP
#             baseline), minibatches of 1024 rows, `vi_iterations` iterations
# One thread.  Wall time of gpgam() and the number of iterations per fit.
# Data: ../shared/data/uci-evans/kin40k (the splits of the uci_datasets
# collection that the paper used; test rows of split 0 = column 1 of
# test_mask.csv.gz), or $SCALEGP_DATA/uci-evans/kin40k.
#
#   Rscript inst/replication/seed003_table2.R [iterations] [features] [feature_batch] [vi_iterations] [methods] [dataset]
#
# `dataset` (default kin40k): another set of ../shared/data/uci-evans (protein,
# keggdirected, keggundirected: the paper's "kegg" and "keggu"), first split,
# inputs x1, ..., xd, all in one gp() term; its rows go to
# inst/replication/results/seed003_table2_<dataset>.rds.
#
# e.g. `Rscript inst/replication/seed003_table2.R 15000 100000 512 1000 qsgp_default,qsgp0,svgp` (the
# stored run, 2026-11-27: about 12 minutes on one thread of a shared 2-core machine).  Each fit's row goes to inst/replication/results/seed003_table2.rds as soon as it is made, replacing that method's row of an earlier run.
suppressPackageStartupMessages(library(scalegp))
args <- commandArgs(trailingOnly = TRUE)
iters <- if (length(args) >= 1) as.integer(args[1]) else 15000L
features <- if (length(args) >= 2) as.numeric(args[2]) else 1e5
fbatch <- if (length(args) >= 3) as.numeric(args[3]) else 512
vi_iters <- if (length(args) >= 4) as.integer(args[4]) else 1000L
methods <- if (length(args) >= 5) strsplit(args[5], ",")[[1]] else c("qsgp_default", "qsgp0", "svgp")
dataset <- if (length(args) >= 6) args[6] else "kin40k"
out <- file.path("inst", "replication", "results",
                 if (dataset == "kin40k") "seed003_table2.rds" else paste0("seed003_table2_", dataset, ".rds"))

source(file.path("inst", "replication", "kin40k_data.R"))
split <- read_uci_evans(dataset, 1)
keep <- vapply(split$train, function(v) stats::sd(v) > 0, TRUE)  # (keggundirected has a constant input)
tr <- split$train[keep]
te <- split$test[keep]
fml <- stats::as.formula(paste0("y ~ gp(", paste(setdiff(names(tr), "y"), collapse = ", "), ", kernel = \"se\")"))

fit_one <- function(method) {
  t0 <- proc.time()[["elapsed"]]
  f <- switch(method,
    qsgp_default = gpgam(fml, data = tr, inference = "qsgp", control = gp_control(threads = 1, verbose = FALSE)),
    qsgp0 = gpgam(fml, data = tr, inference = "qsgp",
                  control = gp_control(features = features, feature_batch = fbatch, batch_size = 500,
                                       iterations = iters, threads = 1, seed = 1, verbose = FALSE)),
    qsgp100 = gpgam(fml, data = tr, inference = "qsgp",
                    control = gp_control(features = features, feature_batch = fbatch, batch_size = 500,
                                         iterations = iters, threads = 1, seed = 1, verbose = FALSE,
                                         covariance = "chevron", dense_columns = 100)),
    qsgp_chevron = gpgam(fml, data = tr, inference = "qsgp",
                         control = gp_control(threads = 1, verbose = FALSE, covariance = "chevron")),
    qsgp_inducing = gpgam(fml, data = tr, inference = "qsgp",
                          control = gp_control(basis = "inducing", feature_batch = 3000, batch_size = 3000,
                                               control_variate = 200, iterations = iters, threads = 1, seed = 1,
                                               verbose = FALSE)),
    svgp = gpgam(fml, data = tr, inference = "vi",
                 control = gp_control(inducing = 512, batch_size = 1024, iterations = vi_iters, threads = 1,
                                      seed = 1, verbose = FALSE)))
  sec <- proc.time()[["elapsed"]] - t0
  p <- predict(f, te, se.fit = TRUE)
  s <- sqrt(p$se.fit^2 + f$params$sigma^2)
  o <- f$control$options
  data.frame(dataset = dataset, method = method, n_train = nrow(tr), n_test = nrow(te), iterations = f$iterations,
             dense_columns = if (method == "svgp") NA else o$dense_columns,
             features = if (method == "svgp") NA else if (identical(o$basis, "inducing")) nrow(tr) else o$features,
             feature_batch = if (method == "svgp") NA else o$feature_batch,
             inducing = if (method == "svgp") 512 else NA, batch_size = f$control$batch_size,
             threads = f$control$threads, seconds = sec,
             seconds_iterations = f$timing[["iterations"]], seconds_final = f$timing[["final"]],
             rmse = sqrt(mean((te$y - p$fit)^2)),
             mnlp = -mean(stats::dnorm(te$y, p$fit, s, log = TRUE)),
             sigma = f$params$sigma, mean_latent_sd = mean(p$se.fit),
             coverage95 = mean(abs(te$y - p$fit) <= 1.96 * s),
             elbo = as.numeric(logLik(f)), date = format(Sys.time(), "%Y-%m-%d"),
             commit = tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) NA_character_))
}

res <- if (file.exists(out)) readRDS(out) else NULL
if (!is.null(res) && is.null(res$dataset)) res <- cbind(dataset = dataset, res)  # (rows stored before the column)
if (!is.null(res) && is.null(res$dense_columns))  # (rows stored before the chevron: mean field)
  res$dense_columns <- ifelse(res$method == "svgp", NA_integer_, 0L)
for (m in methods) {
  r <- fit_one(m)
  print(r[c("method", "iterations", "features", "seconds", "rmse", "mnlp", "sigma", "coverage95")], row.names = FALSE)
  res <- rbind(res[if (!is.null(res)) res$method != m, , drop = FALSE], r)  # a rerun replaces the method's row
  rownames(res) <- NULL
  dir.create(dirname(out), showWarnings = FALSE, recursive = TRUE)
  saveRDS(res, out)
}
