# Where the default fit's time goes on the design of bench/gam_vs_mgcv.R, and
# how many passes over the data bam's time would buy (issue: everyday fits
# as fast as bam).  For each size and family, in one run with the same data
# as gam_vs_mgcv.R (same seeds) and 2 threads on both sides:
#   gpgam default (gp(x1) + gp(x2) + gp(x3, x4), discretised covariates):
#     wall seconds, L-BFGS iterations, evaluations of the profile objective,
#     passes over the data, seconds per pass (the fit's own time over its
#     passes: an upper bound, it includes the work between passes), passes
#     per evaluation, and the fit's seconds outside the optimiser (its
#     timing: fit less init and iterations);
#   the same model with every term on the Hilbert basis (Gaussian only; its
#     statistics are formed by one pass per fit, once more per refit, outside
#     the optimiser, whose evaluations pass over no data);
#   mgcv::bam(discrete = TRUE, nthreads = 2), and the passes its wall time
#     buys at gpgam's seconds per pass.
#   Rscript bench/pass_budget.R [sizes, e.g. 1e5,1e6] [families]
# Writes bench/results/pass_budget.md.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
sizes <- if (length(args) >= 1) as.numeric(strsplit(args[1], ",")[[1]]) else c(1e5, 1e6)
families <- if (length(args) >= 2) strsplit(args[2], ",")[[1]] else c("gaussian", "binomial")
source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
set.seed(2026)
fbar <- mean(ftrue(gen(1e6, "gaussian", 0)))
ctl <- gp_control(threads = 2, seed = 1, verbose = FALSE)
row <- function(family, n, method, secs, fit = NULL, bam_secs = NA) {
  if (is.null(fit)) {
    return(data.frame(family, n, method, seconds = secs, iterations = NA, evaluations = NA, passes = NA,
                      per_pass = NA, per_eval = NA, outside = NA, refits = NA))
  }
  tm <- fit$timing
  fixed <- isTRUE(fit$fixed_design)  # (no pass inside the optimiser)
  data.frame(family, n, method, seconds = secs, iterations = fit$iterations, evaluations = fit$evaluations,
             passes = fit$passes, per_pass = if (fixed) NA else tm[["fit"]] / fit$passes,
             per_eval = if (fixed) NA else fit$passes / fit$evaluations,
             outside = tm[["fit"]] - tm[["init"]] - tm[["iterations"]], refits = fit$hilbert_refits %||% 0)
}
`%||%` <- function(a, b) if (is.null(a)) b else a
rows <- NULL
for (family in families) for (n in sizes) {
  set.seed(n + nchar(family))
  d <- gen(n, family, fbar)
  fam <- if (family == "gaussian") gaussian() else binomial()
  t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = fam, control = ctl))[["elapsed"]]
  rows <- rbind(rows, row(family, n, "gpgam default", t, fit))
  if (family == "gaussian") {
    t <- system.time(fit <- gpgam(y ~ gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert") +
                                    gp(x3, x4, basis = "hilbert"), data = d, control = ctl))[["elapsed"]]
    rows <- rbind(rows, row(family, n, "gpgam Hilbert", t, fit))
  }
  t <- system.time(b <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, family = fam, discrete = TRUE,
                            nthreads = 2))[["elapsed"]]
  rows <- rbind(rows, row(family, n, "bam", t))
  print(rows[rows$family == family & rows$n == n, ])
}
bam_s <- rows$seconds[match(paste(rows$family, rows$n, "bam"), paste(rows$family, rows$n, rows$method))]
rows$bam_buys <- ifelse(rows$method == "bam", NA, bam_s / rows$per_pass)
fmt <- function(x, f) ifelse(is.na(x), "-", sprintf(f, x))
md <- c("# Where the default fit's time goes, and the passes bam's time buys",
        "",
        sprintf("`Rscript bench/pass_budget.R`; %s on %s, %d cores, 2 threads on both sides; mgcv %s.",
                format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(), packageVersion("mgcv")),
        "Data and models as bench/gam_vs_mgcv.R (same seeds). s/pass: the fit's own seconds over its passes (an upper",
        "bound: it includes the work between passes); bam buys: bam's wall time over gpgam's s/pass; outside: the fit's",
        "seconds outside its optimiser (the Hilbert fit forms its statistics there, by one pass per fit and refit).",
        "",
        "| family | n | method | seconds | iterations | evaluations | passes | passes/evaluation | s/pass | outside (s) | Hilbert refits | bam buys (passes) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %.0e | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s |", rows$family, rows$n, rows$method,
                rows$seconds, fmt(rows$iterations, "%d"), fmt(rows$evaluations, "%d"), fmt(rows$passes, "%d"),
                fmt(rows$per_eval, "%.1f"), fmt(rows$per_pass, "%.3f"), fmt(rows$outside, "%.2f"),
                ifelse(rows$method == "gpgam Hilbert", fmt(rows$refits, "%d"), "-"), fmt(rows$bam_buys, "%.0f")))
writeLines(md, file.path("bench", "results", "pass_budget.md"))
writeLines(md)
