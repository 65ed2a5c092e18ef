# inference = "decoupled" over all rows with the discretised pass (the
# default from 5000 rows, Gaussian) against the same fit over the rows
# (decoupled_options(discrete = FALSE)), with defaults otherwise (a pilot
# fit, then the closed-form mean over the mean bases), and mgcv's bam()
# beside them.  Data: y = sin(3 x) + 0.5 x2 + 0.3 z + noise over n rows, a
# smooth of two inputs plus a parametric term.
# Usage: Rscript bench/decoupled_discrete.R [n ...]   (default 2e4 1e5)
# Writes bench/results/decoupled_discrete.md.
suppressPackageStartupMessages({
  library(scalegp)
  library(mgcv)
})
args <- commandArgs(trailingOnly = TRUE)
ns <- if (length(args)) as.numeric(args) else c(2e4, 1e5)
sim <- function(n, seed) {
  set.seed(seed)
  d <- data.frame(x1 = runif(n, -2, 2), x2 = runif(n, -2, 2), z = rnorm(n))
  d$f <- sin(3 * d$x1) * cos(d$x2)
  d$y <- d$f + 0.3 * d$z + rnorm(n, sd = 0.3)
  d
}
rows <- list()
for (n in ns) {
  d <- sim(n, 1)
  nd <- sim(5000, 2)
  truth <- nd$f + 0.3 * nd$z
  run <- function(label, expr) {
    t <- system.time(fit <- eval.parent(substitute(expr)))[["elapsed"]]
    p <- if (inherits(fit, "gam")) predict(fit, nd) else predict(fit, nd)
    rows[[length(rows) + 1]] <<- data.frame(n = n, fit = label, seconds = round(t, 2),
                                            rmse_truth = signif(sqrt(mean((p - truth)^2)), 4),
                                            values = if (!is.null(fit$discrete_values)) fit$discrete_values else NA)
    print(rows[[length(rows)]])
  }
  ctl <- gp_control(verbose = FALSE)
  run("decoupled, discretised (default)", gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = ctl))
  run("decoupled, rows (discrete = FALSE)",
      gpgam(y ~ gp(x1, x2) + z, data = d, inference = "decoupled", control = gp_control(verbose = FALSE, discrete = FALSE)))
  run("vi (default)", gpgam(y ~ gp(x1, x2) + z, data = d, control = ctl))
  run("bam, te(x1, x2) + z", bam(y ~ te(x1, x2) + z, data = d, discrete = TRUE, method = "fREML"))
}
tab <- do.call(rbind, rows)
out <- c("# inference = \"decoupled\": discretised pass against rows", "",
         sprintf("`Rscript bench/decoupled_discrete.R %s`, %s, %s; one run each, 2 threads.", paste(ns, collapse = " "),
                 format(Sys.Date()), R.version.string), "",
         "rmse_truth: against the noise-free mean at 5000 new rows; values: distinct values of the gp() term in the passes over all rows (0: rows).", "",
         knitr::kable(tab, format = "pipe"))
dir.create("bench/results", showWarnings = FALSE)
writeLines(out, "bench/results/decoupled_discrete.md")
cat(out, sep = "\n")
