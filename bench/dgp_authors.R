# The authors' own deep-GP code (Bui et al. 2016; github.com/thangbui/deepGP_approxEP,
# numpy/code) on the PBP splits, with their regression driver's protocol, beside
# the paper's Table 3-4 cells and beside dgp()'s stored fits of the same splits
# (inst/replication/results/seed000_tables.rds, made by seed000_tables.R with
# the same protocol).  It asks whether the paper's cells can be reached by the
# method at all: where the authors' code, run as they published it, lands far
# from the paper's cell, a gap between dgp() and the paper is not a defect of
# dgp().
#
# The authors' code is Python 2.  This script copies numpy/code to a temporary
# directory and ports it to Python 3 with the least change: print statements
# become calls, M (M + 1) / 2 becomes integer division, the unused matplotlib
# import is dropped.  Nothing numerical is touched.  Each fit runs in its own
# process (bench/dgp_authors_driver.py) on one thread (OPENBLAS/OMP threads 1).
#
#   Rscript bench/dgp_authors.R <checkout of deepGP_approxEP> [python] [jobs] [set:split:M:hidden ...]
#     hidden: "" for a one-layer GP, "2" for one hidden layer of 2; jobs: fits run side by side (default 2);
#     default configurations: split 0 of concrete, power, energy and boston, DGP-2 100; of concrete, power
#     and energy, GP 100; of boston, DGP-2 50 (the issue's speed configuration).
#   Needs Python 3 with numpy and scipy (Debian: apt-get install python3-numpy python3-scipy).
#   Writes bench/results/dgp_authors.md (and .csv).
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1) stop("usage: Rscript bench/dgp_authors.R <checkout of deepGP_approxEP> [python] [jobs] [set:split:M:hidden ...]")
repo <- normalizePath(args[1], mustWork = TRUE)
python <- if (length(args) >= 2) args[2] else "python3"
jobs <- if (length(args) >= 3) as.integer(args[3]) else 2L
configs <- if (length(args) >= 4) args[-(1:3)] else  # the longest first
  c("concrete:0:100:2", "power:0:100:2", "energy:0:100:2", "boston:0:100:2",
    "concrete:0:100:", "power:0:100:", "energy:0:100:", "boston:0:50:2")
source(file.path("inst", "replication", "pbp_data.R"))  # shared, pbp_sets
uci <- normalizePath(file.path(shared, "data", "uci"), mustWork = TRUE)

# ---- the Python 3 port ----
code <- file.path(tempfile("aepdgp"), "code")
dir.create(code, recursive = TRUE)
for (f in c("AEPDGP.py", "AEPDGP_net.py", "EQ_kernel.py", "FITC_network.py", "tools.py")) {
  x <- readLines(file.path(repo, "numpy", "code", f), warn = FALSE)
  x <- sub("^(\\s*(if toprint: )?)print ([\"'].*)$", "\\1print(\\3)", x)
  x <- gsub("(M[0-9a-z]*) ?\\* ?\\((M[0-9a-z]*) ?\\+ ?1\\) ?/ ?2", "\\1 * (\\2 + 1) // 2", x)
  x <- sub("^import matplotlib.pyplot as plt", "# import matplotlib.pyplot as plt", x)
  writeLines(x, file.path(code, f))
}
driver <- normalizePath(file.path("bench", "dgp_authors_driver.py"), mustWork = TRUE)
commit <- tryCatch(system2("git", c("-C", shQuote(repo), "rev-parse", "--short", "HEAD"), stdout = TRUE),
                   error = function(e) NA_character_, warning = function(w) NA_character_)

# ---- the fits ----
source(file.path("inst", "replication", "seed000_paper.R"))  # paper_ll, paper_rmse, paper_cell()
ours <- readRDS(file.path("inst", "replication", "results", "seed000_tables.rds"))
one <- function(cf) {
  p <- strsplit(cf, ":", fixed = TRUE)[[1]]
  set <- p[1]; split <- as.integer(p[2]); M <- as.integer(p[3])
  hidden <- if (length(p) >= 4 && nzchar(p[4])) as.integer(strsplit(p[4], ",")[[1]]) else integer(0)
  method <- sprintf("%s_%d", if (length(hidden)) sprintf("dgp%d", length(hidden) + 1) else "gp", M)
  out <- system2(python, c(shQuote(driver), shQuote(code), shQuote(file.path(uci, pbp_sets[[set]])), split, M, 6000, hidden),
                 stdout = TRUE, stderr = FALSE, env = c("OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"))
  r <- grep("^RESULT ", out, value = TRUE)
  if (!length(r)) { message(cf, ": no result"); return(NULL) }
  v <- as.numeric(strsplit(r, " ")[[1]][-1])
  o <- ours[ours$set == set & ours$split == split & ours$method == method, ]
  cell <- function(tab) {
    p <- paper_cell(tab, set, method)
    if (is.null(p)) "" else sprintf("%.2f +/- %.2f", p[1], p[2])
  }
  row <- data.frame(
    set = set, split = split, method = method,
    authors_ll = v[1], authors_rmse = v[2], authors_ms = 1000 * v[3] / v[4],
    dgp_ll = if (nrow(o)) o$test_ll[1] else NA, dgp_rmse = if (nrow(o)) o$rmse[1] else NA,
    dgp_ms = if (nrow(o)) 1000 * o$per_iteration[1] else NA,
    paper_ll = cell(paper_ll), paper_rmse = cell(paper_rmse))
  print(row, digits = 4)
  row
}
rows <- parallel::mclapply(configs, one, mc.cores = jobs, mc.preschedule = FALSE)
tab <- do.call(rbind, rows)
tab <- tab[order(match(tab$set, names(pbp_sets)), tab$split, tab$method), ]
dir.create(file.path("bench", "results"), showWarnings = FALSE)
utils::write.csv(tab, file.path("bench", "results", "dgp_authors.csv"), row.names = FALSE)
f3 <- function(x) ifelse(is.na(x), "", sprintf("%.3f", x))
f1 <- function(x) ifelse(is.na(x), "", sprintf("%.1f", x))
md <- c("# The authors' deep-GP code against the paper's cells and dgp() on the same splits", "",
        sprintf("`Rscript bench/dgp_authors.R <deepGP_approxEP checkout>`; %s; %s, %d cores; authors' code at commit %s (numpy/code, ported to Python 3: prints, integer division, no matplotlib); Python numpy %s.",
                format(Sys.Date()), R.version$platform, parallel::detectCores(), commit,
                tryCatch(system2(python, c("-c", shQuote("import numpy; print(numpy.__version__)")), stdout = TRUE), error = function(e) "?")),
        "",
        "Protocol of the authors' driver (numpy/tests/run_reg_sep.py): targets normalised, inputs as they are, minibatch 50, Adam 0.005, 6000 iterations (whole epochs), numpy seed 123; one fit per row, one thread.",
        "dgp(): the stored fit of the same split and column in inst/replication/results/seed000_tables.rds (seed000_tables.R: same protocol, inputs standardised), with its stored time per iteration (that run had two or three fits side by side).",
        "Paper: the cell of Table 3 (test log-likelihood) or Table 4 (RMSE), mean +/- s.e. over 20 splits.", "",
        "| set | split | column | authors' code test LL | dgp() test LL | paper test LL | authors' RMSE | dgp() RMSE | paper RMSE | authors' ms/iteration | dgp() ms/iteration |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |", tab$set, tab$split,
                c(gp_100 = "GP 100", dgp2_50 = "DGP-2 50", dgp2_100 = "DGP-2 100")[tab$method],
                f3(tab$authors_ll), f3(tab$dgp_ll), tab$paper_ll, f3(tab$authors_rmse), f3(tab$dgp_rmse), tab$paper_rmse,
                f1(tab$authors_ms), f1(tab$dgp_ms)))
writeLines(md, file.path("bench", "results", "dgp_authors.md"))
cat(md, sep = "\n")
