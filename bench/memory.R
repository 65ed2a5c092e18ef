# Peak memory and thread scaling of gpgam() against mgcv::bam(discrete = TRUE)
# on the design of bench/gam_vs_mgcv.R (gp(x1) + gp(x2) + gp(x3, x4) against
# s(x1) + s(x2) + te(x3, x4)).  Every fit runs in its own R process under
# /usr/bin/time -v; "data only" is the same process without the fit (R, the
# packages and the data), and bytes per row are (peak - data only) / n.
#   Rscript bench/memory.R [cases: family:n[:threads],...]
# Writes bench/results/memory.md.
args <- commandArgs(TRUE)
cases <- if (length(args) >= 1) strsplit(args[1], ",")[[1]] else
  c("gaussian:1e5", "gaussian:1e6", "gaussian:1e6:1", "gaussian:1e7", "binomial:1e5", "binomial:1e6")
child <- tempfile(fileext = ".R")
writeLines(c(
  'suppressMessages({library(scalegp); library(mgcv)})',
  'a <- commandArgs(TRUE); method <- a[1]; n <- as.numeric(a[2]); family <- a[3]; threads <- as.integer(a[4])',
  'ftrue <- function(d) sin(3 * d$x1) + 0.5 * d$x2^2 + 2 * exp(-(d$x3^2 + d$x4^2))',
  'set.seed(1)',
  'd <- as.data.frame(matrix(runif(4 * n, -2, 2), n, dimnames = list(NULL, paste0("x", 1:4))))',
  'f <- ftrue(d)',
  'd$y <- if (family == "gaussian") f + rnorm(n, sd = 0.3) else rbinom(n, 1, plogis(2 * (f - 0.9)))',
  'rm(f)',
  'fam <- if (family == "gaussian") gaussian() else binomial()',
  'secs <- NA; it <- NA',
  'if (method == "gpgam") {',
  '  secs <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = fam,',
  '                      control = gp_control(threads = threads, seed = 1, verbose = FALSE)))[["elapsed"]]',
  '  it <- fit$timing[["iterations"]]',
  '} else if (method == "bam") {',
  '  secs <- system.time(fit <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, family = fam, discrete = TRUE,',
  '                                 nthreads = threads))[["elapsed"]]',
  '}',
  'cat(sprintf("RESULT %.3f %.3f\\n", secs, it))'), child)
run <- function(method, n, family, threads) {
  out <- system2("/usr/bin/time", c("-v", "Rscript", child, method, format(n, scientific = FALSE), family, threads),
                 stdout = TRUE, stderr = TRUE)
  res <- as.numeric(strsplit(sub("^RESULT ", "", grep("^RESULT", out, value = TRUE)), " ")[[1]])
  kb <- as.numeric(sub(".*: ", "", grep("Maximum resident set size", out, value = TRUE)))
  data.frame(family = family, n = n, threads = threads, method = method, seconds = res[1],
             iter_seconds = res[2], peak_mb = kb / 1024)
}
rows <- NULL
for (cs in cases) {
  p <- strsplit(cs, ":")[[1]]
  family <- p[1]; n <- as.numeric(p[2]); threads <- if (length(p) >= 3) as.integer(p[3]) else 2L
  base <- run("none", n, family, threads)
  for (method in c("gpgam", if (threads == 2L) "bam")) {
    r <- run(method, n, family, threads)
    r$bytes_per_row <- (r$peak_mb - base$peak_mb) * 2^20 / n
    r$data_only_mb <- base$peak_mb
    rows <- rbind(rows, r)
    print(r)
  }
}
md <- c("| family | n | threads | method | seconds | of which L-BFGS iterations | peak MB | data only MB | bytes per row |",
        "|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %.0e | %d | %s | %.1f | %s | %.0f | %.0f | %.0f |", rows$family, rows$n, rows$threads,
                rows$method, rows$seconds, ifelse(is.na(rows$iter_seconds), "-", sprintf("%.1f", rows$iter_seconds)),
                rows$peak_mb, rows$data_only_mb, rows$bytes_per_row),
        "", sprintf("Measured %s on %s, %d cores; mgcv %s.  Command: Rscript bench/memory.R", format(Sys.time(), "%Y-%m-%d"),
                    R.version$platform, parallel::detectCores(), packageVersion("mgcv")))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(md, file.path("bench", "results", "memory.md"))
writeLines(md)
