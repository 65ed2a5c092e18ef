# What the chevron covariance of inference = "qsgp" (Challis and Barber 2013;
# Evans and Nair 2018's QSGP-kappa) buys over the mean field, on one gp()
# term: mgcv::gamSim(1, n = 4000) seed 1, y ~ gp(x2) (its strongest term).
#   (a) the method's reach: fixed hyperparameters (variance 10, lengthscale
#       0.25, sigma 2.7), 512 features, every row and feature in every
#       iteration (a deterministic gradient), 1500 iterations, no control
#       variate: dense_columns 0 (mean field), 20, 100;
#   (b) the defaults (hyperparameters learned, 2048 features, 512 sampled,
#       minibatches of 500 rows, 2000 iterations): dense_columns 0 and 20;
# beside inference = "vi" at its defaults (same hyperparameters in (a)).
# Columns: the exact ELBO of the fit (logLik), the mean latent sd at the
# first 400 rows (data scale), the RMSE of the fitted curve against vi's at
# those rows, sigma, seconds.  One thread, one run each.
#   Rscript bench/qsgp_chevron.R      (about 8 minutes; writes bench/results/qsgp_chevron.md)
suppressPackageStartupMessages(library(scalegp))
set.seed(1)
d <- mgcv::gamSim(1, n = 4000, verbose = FALSE)
rows <- d[1:400, ]
run <- function(setting, engine, k, fml, ctl) {
  t0 <- proc.time()[["elapsed"]]
  fit <- if (engine == "vi") gpgam(fml, data = d, control = ctl)
         else gpgam(fml, data = d, inference = "qsgp", control = ctl)
  sec <- proc.time()[["elapsed"]] - t0
  p <- predict(fit, rows, se.fit = TRUE)
  list(fit = fit, p = p, row = data.frame(setting = setting, engine = engine, dense_columns = k,
                                          elbo = as.numeric(logLik(fit)), mean_latent_sd = mean(p$se.fit),
                                          sigma = sigma(fit), seconds = sec))
}
out <- list()
fa <- y ~ gp(x2, variance = 10, lengthscale = 0.25)
ref <- run("(a) deterministic", "vi", NA, fa, gp_control(verbose = FALSE, threads = 1, sigma = 2.7, fixed = "sigma"))
out[[1]] <- cbind(ref$row, rmse_vs_vi = 0)
for (k in c(0, 20, 100)) {
  r <- run("(a) deterministic", "qsgp", k, fa,
           gp_control(verbose = FALSE, threads = 1, sigma = 2.7, fixed = "sigma", features = 512, feature_batch = 512,
                      batch_size = 4000, iterations = 1500, control_variate = 0, dense_columns = k, seed = 1))
  out[[length(out) + 1]] <- cbind(r$row, rmse_vs_vi = sqrt(mean((r$p$fit - ref$p$fit)^2)))
  print(tail(out, 1)[[1]], row.names = FALSE)
}
fb <- y ~ gp(x2)
ref <- run("(b) defaults", "vi", NA, fb, gp_control(verbose = FALSE, threads = 1))
out[[length(out) + 1]] <- cbind(ref$row, rmse_vs_vi = 0)
for (k in c(0, 20)) {
  r <- run("(b) defaults", "qsgp", k, fb, gp_control(verbose = FALSE, threads = 1, dense_columns = k, seed = 1))
  out[[length(out) + 1]] <- cbind(r$row, rmse_vs_vi = sqrt(mean((r$p$fit - ref$p$fit)^2)))
  print(tail(out, 1)[[1]], row.names = FALSE)
}
tab <- do.call(rbind, out)
num <- vapply(tab, is.numeric, TRUE)
tab[num] <- lapply(tab[num], function(v) signif(v, 5))
lines <- c("# qsgp: chevron against mean field (bench/qsgp_chevron.R)", "",
           sprintf("%s, commit %s, one thread, one run each.", format(Sys.Date()),
                   tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) "?")), "",
           paste("|", paste(names(tab), collapse = " | "), "|"),
           paste("|", paste(rep("---", ncol(tab)), collapse = " | "), "|"),
           apply(tab, 1, function(r) paste("|", paste(trimws(format(r)), collapse = " | "), "|")))
writeLines(lines, "bench/results/qsgp_chevron.md")
cat(lines, sep = "\n")
