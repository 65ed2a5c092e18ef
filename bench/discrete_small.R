# Discretised covariates in small fits: gpgam() fits of mgcv's gamSim(1)
# (four smooth terms; Gaussian scale 2, binary scale 1, Poisson scale 0.2, as
# bench/prompt_vs_mgcv.R) as the package made them under 5000 rows before
# 2026-11-29 ("before": over the rows for a Gaussian family, over the
# distinct exact values, discrete = TRUE with bins = Inf, for the others)
# and with the defaults (vi_options(discrete = NA): the distinct values,
# exact under 1000 rows, rounded to 1000 bins per input from 1000 rows),
# beside mgcv::gam(method = "REML"), in one run.  Per fit: seconds, passes over the
# data, hold-out NLPD on a fresh gamSim(1) data set of the same size, and the
# mean over the four terms of the RMSE and 95% band coverage of the centred
# term at the hold-out rows.  Means over seeds.
#   Rscript bench/discrete_small.R [sizes] [seeds] [threads]
# Writes bench/results/discrete_small.md.
suppressMessages({
  library(scalegp)
  library(mgcv)
})
args <- commandArgs(TRUE)
sizes <- if (length(args) >= 1) as.numeric(strsplit(args[1], ",")[[1]]) else c(500, 1000, 2000, 4000)
seeds <- if (length(args) >= 2) seq_len(as.integer(args[2])) else 1:3
threads <- if (length(args) >= 3) as.integer(args[3]) else 1L
source(file.path("bench", "scores.R"))  # nlpd(), term_scores()
fams <- list(gaussian = list(dist = "normal", scale = 2), binomial = list(dist = "binary", scale = 1),
             poisson = list(dist = "poisson", scale = 0.2))
gs <- function(n, f, seed) {
  set.seed(seed)
  suppressWarnings(gamSim(1, n = n, dist = f$dist, scale = f$scale, verbose = FALSE))
}
score <- function(fam, f, te, eta, se, sigma, terms) {
  fs <- if (fam == "poisson") f$scale else 1
  sc <- sapply(0:3, function(k) term_scores(terms$fit[, k + 1], terms$se.fit[, k + 1], fs * te[[paste0("f", k)]]))
  c(nlpd = nlpd(fam, te$y, eta, se, sigma), rmse = mean(sc["rmse", ]), cover = mean(sc["cover", ]))
}
rows <- NULL
for (fam in names(fams)) for (n in sizes) for (seed in seeds) {
  f <- fams[[fam]]
  tr <- gs(n, f, seed)
  te <- gs(n, f, 1000 + seed)
  family <- get(fam)()
  for (before in c(TRUE, FALSE)) {
    ctl <- if (before) gp_control(verbose = FALSE, seed = 1, threads = threads, discrete = fam != "gaussian", bins = Inf)
           else gp_control(verbose = FALSE, seed = 1, threads = threads)
    secs <- system.time(g <- gpgam(y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3), data = tr, family = family,
                                   control = ctl))[["elapsed"]]
    p <- predict(g, te, se.fit = TRUE)
    s <- score(fam, f, te, p$fit, p$se.fit, if (fam == "gaussian") sigma(g) else 1,
               predict(g, te, type = "terms", se.fit = TRUE))
    rows <- rbind(rows, data.frame(family = fam, n = n, seed = seed, method = if (before) "gpgam before" else "gpgam default",
                                   seconds = secs, passes = if (is.null(g$passes)) NA else g$passes, t(s), converged = g$converged))
  }
  secs <- system.time(m <- gam(y ~ s(x0) + s(x1) + s(x2) + s(x3), data = tr, family = family,
                               method = "REML"))[["elapsed"]]
  p <- predict(m, te, se.fit = TRUE)
  s <- score(fam, f, te, p$fit, p$se.fit, if (fam == "gaussian") sqrt(m$sig2) else 1,
             predict(m, te, type = "terms", se.fit = TRUE))
  rows <- rbind(rows, data.frame(family = fam, n = n, seed = seed, method = "gam REML", seconds = secs, passes = NA,
                                 t(s), converged = m$converged))
  print(utils::tail(rows, 3), digits = 4)
}
agg <- stats::aggregate(cbind(seconds, passes, nlpd, rmse, cover, converged) ~ family + n + method,
                        data = transform(rows, passes = ifelse(is.na(passes), -1, passes)), FUN = mean)
agg <- agg[order(match(agg$family, names(fams)), agg$n, match(agg$method, c("gpgam before", "gpgam default", "gam REML"))), ]
md <- c("# gpgam() on discretised covariates in small fits (gamSim(1), four smooths)", "",
        sprintf("Command: `Rscript bench/discrete_small.R %s %d %d`; %s; %s, %d cores; mgcv %s; scalegp %s; %d thread(s) for gpgam.",
                paste(sizes, collapse = ","), length(seeds), threads, format(Sys.Date()), R.version$platform,
                parallel::detectCores(), packageVersion("mgcv"), packageVersion("scalegp"), threads), "",
        sprintf("Means over %d seeds. NLPD: hold-out (a fresh gamSim(1) set of the same size); term RMSE and coverage: mean over the", length(seeds)),
        "four centred terms at the hold-out rows; converged: share of fits at a stationary point. before: over the rows",
        "(Gaussian) or the distinct exact values (others), the defaults under 5000 rows until 2026-11-29; default: the",
        "distinct values, exact under 1000 rows, rounded to 1000 bins per input from 1000 rows.", "",
        "| family | n | method | seconds | passes | NLPD | term RMSE | term coverage | converged |",
        "|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %d | %s | %.2f | %s | %.4f | %.3f | %.3f | %.2f |", agg$family, agg$n, agg$method, agg$seconds,
                ifelse(agg$passes < 0, "-", sprintf("%.0f", agg$passes)), agg$nlpd, agg$rmse, agg$cover, agg$converged))
writeLines(md, file.path("bench", "results", "discrete_small.md"))
cat(md, sep = "\n")
