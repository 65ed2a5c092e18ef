# ti(x, z) with the Hilbert basis (its sines centred along both inputs)
# against the inducing basis and mgcv's ti(), on draws of
#   y = sin(2 pi x) + 4 (z - 1/2)^2 + 6 (x - 1/2)(z - 1/2) + N(0, 0.2^2),  x, z ~ U(0, 1)
# model y ~ ti(x) + ti(z) + ti(x, z), defaults otherwise.  Per draw: seconds,
# RMSE of the fitted mean against the truth, and the ti(x, z) term's RMSE and
# 95% band coverage at the data rows against the pure interaction
# 6 (x - mean x)(z - mean z), centred.
#   Rscript bench/hilbert_ti.R [draws, default 6] [rows, default 400]
# Writes bench/results/hilbert_ti.md.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
draws <- if (length(args) >= 1) as.integer(args[1]) else 6L
n <- if (length(args) >= 2) as.integer(args[2]) else 400L
res <- NULL
for (seed in seq_len(draws)) {
  set.seed(seed)
  d <- data.frame(x = runif(n), z = runif(n))
  truth <- sin(2 * pi * d$x) + 4 * (d$z - 0.5)^2 + 6 * (d$x - 0.5) * (d$z - 0.5)
  d$y <- truth + rnorm(n, sd = 0.2)
  tr <- 6 * (d$x - mean(d$x)) * (d$z - mean(d$z))
  tr <- tr - mean(tr)
  row <- function(method, t, fitted, p, basis = "")
    data.frame(seed, method, seconds = t, rmse = sqrt(mean((fitted - truth)^2)),
               term_rmse = sqrt(mean((p$fit[, 3] - tr)^2)), term_coverage = mean(abs(p$fit[, 3] - tr) < 1.96 * p$se.fit[, 3]),
               basis = basis)
  for (b in c("hilbert", "inducing")) {
    f <- as.formula(sprintf('y ~ ti(x, basis = "%s") + ti(z, basis = "%s") + ti(x, z, basis = "%s")', b, b, b))
    t <- system.time(fit <- gpgam(f, data = d, control = gp_control(seed = 3, verbose = FALSE)))[["elapsed"]]
    h <- fit$terms$gp[[3]]$hilbert
    res <- rbind(res, row(paste("gpgam", b), t, fitted(fit), predict(fit, d, type = "terms", se.fit = TRUE),
                          if (b == "hilbert") sprintf("%d refit(s), %s sines, box %s half-ranges", fit$hilbert_refits,
                                                      paste(h$m, collapse = " x "), paste(round(h$c, 2), collapse = " x "))
                          else ""))
  }
  t <- system.time(g <- gam(y ~ ti(x) + ti(z) + ti(x, z), data = d, method = "REML"))[["elapsed"]]
  res <- rbind(res, row("gam REML", t, fitted(g), predict(g, d, type = "terms", se.fit = TRUE)))
}
agg <- aggregate(cbind(seconds, rmse, term_rmse, term_coverage) ~ method, res, mean)
agg$worst_coverage <- aggregate(term_coverage ~ method, res, min)$term_coverage
md <- c("# ti(x, z) with the Hilbert basis against the inducing basis and mgcv", "",
        sprintf("Command: `Rscript bench/hilbert_ti.R %d %d`; %s; %s, %d cores; mgcv %s.", draws, n,
                format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(), packageVersion("mgcv")), "",
        "Means over the draws (worst: the lowest coverage of one draw).", "",
        "| method | seconds per fit | RMSE of the mean | ti(x, z) RMSE | ti(x, z) 95% coverage | worst |",
        "|---|---|---|---|---|---|",
        sprintf("| %s | %.3f | %.4f | %.4f | %.3f | %.3f |", agg$method, agg$seconds, agg$rmse, agg$term_rmse,
                agg$term_coverage, agg$worst_coverage))
hs <- res[res$method == "gpgam hilbert", ]
md <- c(md, "", "The Hilbert ti(x, z) of each draw after its refits:", "",
        sprintf("- draw %d: %s", hs$seed, hs$basis))
writeLines(md, file.path("bench", "results", "hilbert_ti.md"))
writeLines(md)
