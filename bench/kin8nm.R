# kin8nm (PBP splits of Hernandez-Lobato & Adams 2015, in ../shared/data/uci):
# test log-likelihood and RMSE on the original scale, mean +/- s.e. over splits,
# for gpgam(inference = "vi") with M inducing points.
#
#   Rscript bench/kin8nm.R [M] [n_splits] [batch_size] [iterations] [threads]
#   e.g. Rscript bench/kin8nm.R 100 20          (full batch, all 20 splits)
#        Rscript bench/kin8nm.R 500 3 2000 600  (minibatches, first 3 splits)
# Appends one row to bench/results/kin8nm.md.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
arg <- function(i, default) if (length(args) >= i) as.numeric(args[i]) else default
M <- arg(1, 100); n_splits <- arg(2, 20); batch <- arg(3, NA); iters <- arg(4, 2000); threads <- arg(5, 1)
root <- Sys.getenv("SCALEGP_DATA", "../shared/data")
dir <- file.path(root, "uci", "kin8nm")
if (!dir.exists(dir)) stop("kin8nm data not found in ", dir, "; set SCALEGP_DATA")
dat <- as.matrix(utils::read.table(file.path(dir, "data.txt")))
fi <- scan(file.path(dir, "index_features.txt"), quiet = TRUE) + 1
ti <- scan(file.path(dir, "index_target.txt"), quiet = TRUE) + 1
d <- as.data.frame(dat[, c(fi, ti)])
names(d) <- c(paste0("x", seq_along(fi)), "y")
f <- stats::as.formula(paste("y ~ gp(", paste0("x", seq_along(fi), collapse = ", "), ")"))
res <- NULL
for (k in seq_len(n_splits) - 1) {
  tr <- scan(file.path(dir, sprintf("index_train_%d.txt", k)), quiet = TRUE) + 1
  te <- scan(file.path(dir, sprintf("index_test_%d.txt", k)), quiet = TRUE) + 1
  ctl <- gp_control(inducing = M, batch_size = if (is.na(batch)) NULL else batch, iterations = iters,
                    threads = threads, seed = k + 1, verbose = FALSE, optimizer = "adam", priors = FALSE)
  t <- system.time(fit <- gpgam(f, data = d[tr, ], control = ctl))[["elapsed"]]
  p <- predict(fit, d[te, ], se.fit = TRUE)
  sd_pred <- sqrt(p$se.fit^2 + sigma(fit)^2)
  ll <- mean(stats::dnorm(d$y[te], p$fit, sd_pred, log = TRUE))
  rmse <- sqrt(mean((d$y[te] - p$fit)^2))
  res <- rbind(res, data.frame(split = k, ll = ll, rmse = rmse, iterations = fit$iterations,
                               converged = fit$converged, seconds = t))
  cat(sprintf("split %2d: test LL %.4f  RMSE %.4f  (%d iterations, %.0f s)\n", k, ll, rmse, fit$iterations, t))
}
se <- function(x) if (length(x) > 1) stats::sd(x) / sqrt(length(x)) else NA
row <- sprintf("| scalegp vi, M = %d, %s | %d | %.3f +/- %.3f | %.4f +/- %.4f | %.0f | %s |",
               M, if (is.na(batch)) "full batch" else paste("batch", batch), nrow(res),
               mean(res$ll), se(res$ll), mean(res$rmse), se(res$rmse), mean(res$seconds),
               format(Sys.Date()))
cat(row, "\n")
out <- file.path("bench", "results", "kin8nm.md")
if (!file.exists(out))
  writeLines(c("| method | splits | test LL | test RMSE | seconds per split | date |",
               "|---|---|---|---|---|---|"), out)
cat(row, "\n", file = out, append = TRUE, sep = "")
utils::write.csv(res, file.path("bench", "results", sprintf("kin8nm-M%d-%s.csv", M,
                 if (is.na(batch)) "full" else paste0("b", batch))), row.names = FALSE)
