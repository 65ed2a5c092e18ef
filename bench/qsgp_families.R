# inference = "qsgp" against "vi" for binomial (logit, probit) and Poisson
# responses on one smooth curve (the data of the qsgp family tests,
# tests/testthat/test-qsgp.R): n rows with x ~ U(-2, 2),
#   binomial: y ~ Bernoulli(g^{-1}(1.5 sin(2x) + 0.5x - 0.2)), logit and probit;
#   Poisson:  y ~ Poisson(exp(0.5 + 0.8 sin(2x))).
# Per fit: seconds, the latent RMSE against the truth over 200 grid points in
# [-1.9, 1.9], the share of grid points whose 95% band for the latent covers
# the truth, the mean latent sd, the fitted kernel variance and the ELBO.
# qsgp at its defaults (2048 features, 512 sampled, 2000 iterations of 500
# rows) and at the tests' small settings (128 / 64 / 1000).  Replicate data
# sets with seeds 42, 43, 44.
#   Rscript bench/qsgp_families.R [n] [replicates]
# Writes bench/results/qsgp_families.md.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 2000
reps <- if (length(args) >= 2) as.integer(args[2]) else 3L
f_bin <- function(x) 1.5 * sin(2 * x) + 0.5 * x - 0.2
f_pois <- function(x) 0.5 + 0.8 * sin(2 * x)
grid <- data.frame(x = seq(-1.9, 1.9, length.out = 200), z = 0)
cases <- list(logit = list(fam = binomial(), y = "b", f = f_bin),
              probit = list(fam = binomial(link = "probit"), y = "bp", f = f_bin),
              poisson = list(fam = poisson(), y = "k", f = f_pois))
engines <- list("vi" = list(inference = "vi"),
                "qsgp default" = list(inference = "qsgp"),
                "qsgp 128/64/1000" = list(inference = "qsgp", features = 128, feature_batch = 64, iterations = 1000))
rows <- list()
for (r in seq_len(reps)) {
  set.seed(41 + r)  # as qs_glm_data() of the tests for r = 1
  x <- runif(n, -2, 2)
  d <- data.frame(x = x, z = rnorm(n))
  d$b <- rbinom(n, 1, plogis(f_bin(x)))
  d$bp <- rbinom(n, 1, pnorm(f_bin(x)))
  d$k <- rpois(n, exp(f_pois(x)))
  for (cn in names(cases)) {
    cs <- cases[[cn]]
    truth <- cs$f(grid$x)
    for (en in names(engines)) {
      e <- engines[[en]]
      ctl <- do.call(gp_control, c(list(verbose = FALSE, threads = 2, seed = 1), e[setdiff(names(e), "inference")]))
      secs <- system.time(fit <- gpgam(as.formula(paste(cs$y, "~ gp(x)")), data = d, family = cs$fam,
                                       inference = e$inference, control = ctl))[[3]]
      p <- predict(fit, grid, se.fit = TRUE)
      rows[[length(rows) + 1]] <- data.frame(
        replicate = r, family = cn, engine = en, seconds = secs, rmse = sqrt(mean((p$fit - truth)^2)),
        coverage = mean(abs(p$fit - truth) <= 1.96 * p$se.fit), mean_sd = mean(p$se.fit),
        variance = fit$params$gp[[1]]$variance, elbo = as.numeric(logLik(fit)))
      print(rows[[length(rows)]], row.names = FALSE)
    }
  }
}
res <- do.call(rbind, rows)
agg <- stats::aggregate(cbind(seconds, rmse, coverage, mean_sd, variance, elbo) ~ family + engine, data = res, FUN = mean)
agg <- agg[order(match(agg$family, names(cases)), match(agg$engine, names(engines))), ]
fmt <- function(v, d) formatC(v, format = "f", digits = d)
lines <- c(sprintf("# qsgp families against vi (n = %g, %d replicate data sets; means over them)", n, reps), "",
           sprintf("`Rscript bench/qsgp_families.R %g %d`, scalegp commit %s, %s.", n, reps,
                   tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) "?"), format(Sys.time(), "%Y-%m-%d")),
           "", "| family | engine | seconds | latent RMSE | coverage of 95% band | mean latent sd | kernel variance | ELBO |",
           "|---|---|---|---|---|---|---|---|",
           sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", agg$family, agg$engine, fmt(agg$seconds, 2), fmt(agg$rmse, 3),
                   fmt(agg$coverage, 2), fmt(agg$mean_sd, 3), fmt(agg$variance, 3), fmt(agg$elbo, 1)),
           "", "Per replicate:", "", "| replicate | family | engine | seconds | latent RMSE | coverage | mean sd |", "|---|---|---|---|---|---|---|",
           sprintf("| %d | %s | %s | %s | %s | %s | %s |", res$replicate, res$family, res$engine, fmt(res$seconds, 2),
                   fmt(res$rmse, 3), fmt(res$coverage, 2), fmt(res$mean_sd, 3)))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(lines, file.path("bench", "results", "qsgp_families.md"))
cat(lines, sep = "\n")
