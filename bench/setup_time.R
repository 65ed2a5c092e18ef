# Time of a 1e6-row Gaussian gpgam() fit on the design of bench/gam_vs_mgcv.R
# (gp(x1) + gp(x2) + gp(x3, x4)) split into the engine (fit$timing["fit"]:
# discretising, iterations, fitted values) and everything outside it (model
# frame, setup, collecting the fit), for the first fit of a fresh R process
# and for a second fit in the same process.  Each rep runs in its own process.
#   Rscript bench/setup_time.R [reps] [name] [label]
# Writes bench/results/<name>.md (default setup_time); `label` names the
# build in the table (e.g. a commit, when run with R_LIBS pointing at it).
args <- commandArgs(TRUE)
if (length(args) >= 1 && args[1] == "--child") {
  suppressMessages(library(scalegp))
  source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
  set.seed(1)
  d <- gen(1e6, "gaussian", 0)
  for (r in 1:2) {
    t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d,
                                  control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
    cat(sprintf("%d %.3f %.3f\n", r, t, fit$timing[["fit"]]))
  }
  quit(save = "no")
}
reps <- if (length(args) >= 1) as.integer(args[1]) else 3L
name <- if (length(args) >= 2) args[2] else "setup_time"
label <- if (length(args) >= 3) args[3] else as.character(utils::packageVersion("scalegp"))
res <- NULL
for (k in seq_len(reps)) {
  out <- system2(file.path(R.home("bin"), "Rscript"), c(file.path("bench", "setup_time.R"), "--child"), stdout = TRUE)
  v <- read.table(text = out, col.names = c("fit", "total", "engine"))
  res <- rbind(res, data.frame(rep = k, v))
}
res$outside <- res$total - res$engine
print(res)
fmt <- function(x) paste(sprintf("%.2f", x), collapse = ", ")
md <- c(sprintf("# Time outside the engine: 1e6-row Gaussian fit (%s)", label), "",
        sprintf("`Rscript bench/setup_time.R %d %s %s`, %s, %s, %d cores; %d processes, two fits each.",
                reps, name, label, format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(), reps), "",
        "| fit of the process | total (s) | engine (s) | outside the engine (s) |", "|---|---|---|---|",
        sprintf("| %s | %s | %s | %s |", c("first", "second"),
                sapply(1:2, function(f) fmt(res$total[res$fit == f])),
                sapply(1:2, function(f) fmt(res$engine[res$fit == f])),
                sapply(1:2, function(f) fmt(res$outside[res$fit == f]))))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(md, file.path("bench", "results", paste0(name, ".md")))
writeLines(md)
