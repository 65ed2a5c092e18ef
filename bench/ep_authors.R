# Batch EP classification beside the authors' own batch SEP code for
# Hernandez-Lobato and Hernandez-Lobato (2016), run in the same process on
# this machine: the seven Table 1 data sets, m = 15% of the training rows as
# inducing points, random 90/10 splits, one thread.  The authors' code runs its
# fixed 250 iterations (one damped EP sweep and one hyperparameter step each,
# inducing inputs learned, its defaults otherwise) on inputs standardised as in
# its own experiment scripts; gpgam() runs with its defaults for EP (L-BFGS on
# the EP evidence with the sites refitted at every step, stopping at a
# stationary point) and one thread.
#
# Get the authors' code (public repository, commit 5e92186; it loads doMC,
# Debian package r-cran-domc or CRAN's doMC):
#   git clone https://github.com/theogf/MultiClassGPC /tmp/MultiClassGPC
#   git -C /tmp/MultiClassGPC checkout 5e92186
# then, from the package root:
#   Rscript bench/ep_authors.R /tmp/MultiClassGPC/src/EPMultiClass/ep_code/sep_batch.R [splits] [sets]
# It writes bench/results/ep_authors.md (and .rds).
library(scalegp)
args <- commandArgs(trailingOnly = TRUE)
sep_file <- if (length(args) >= 1) args[1] else "/tmp/MultiClassGPC/src/EPMultiClass/ep_code/sep_batch.R"
splits <- if (length(args) >= 2) as.integer(args[2]) else 3L
sets <- if (length(args) >= 3 && args[3] != "all") strsplit(args[3], ",")[[1]] else
  c("Australian", "Breast", "Crabs", "Heart", "Ionosphere", "Pima", "Sonar")
if (!file.exists(sep_file)) stop("the authors' sep_batch.R is not at ", sep_file, "; see the header of this script")
source(file.path("inst", "replication", "seed001_data.R"))  # load_set(), gp_formula()
m_frac <- 0.15

nll <- function(p, y01) -mean(ifelse(y01 == 1, log(p), log1p(-p)))

authors_fit <- function(d, tr, M, seed) {
  sep <- new.env()
  sys.source(sep_file, envir = sep)
  sep$REPORT <- FALSE
  X <- as.matrix(d[, names(d) != "y"])
  mu <- colMeans(X[tr, , drop = FALSE])
  s <- apply(X[tr, , drop = FALSE], 2, stats::sd)
  s[s == 0] <- 1
  X <- sweep(sweep(X, 2, mu), 2, s, "/")
  y <- 2 * d$y - 1
  set.seed(seed)
  t0 <- proc.time()[["elapsed"]]
  out <- utils::capture.output(ret <- sep$epGPCInternal(X[tr, , drop = FALSE], y[tr], n_pseudo_inputs = M))
  time <- proc.time()[["elapsed"]] - t0
  p <- as.numeric(sep$predict(X[-tr, , drop = FALSE], ret))
  data.frame(nll = nll(p, d$y[-tr]), error = mean((p > 0.5) != (d$y[-tr] == 1)), time = time, iterations = 250L)
}

ours_fit <- function(d, tr, M, seed, ...) {
  fo <- gp_formula(d)
  t0 <- proc.time()[["elapsed"]]
  f <- gpgam(fo, data = d[tr, ], family = stats::binomial("probit"), inference = "ep",
             control = gp_control(inducing = M, seed = seed, threads = 1, verbose = FALSE, ...))
  time <- proc.time()[["elapsed"]] - t0
  p <- predict(f, d[-tr, ], type = "response")
  data.frame(nll = nll(p, d$y[-tr]), error = mean((p > 0.5) != (d$y[-tr] == 1)), time = time,
             iterations = f$iterations, converged = isTRUE(f$converged))
}

A <- "authors' SEP (R)"; O <- "gpgam EP, defaults"; P <- "gpgam EP, priors = FALSE"
S <- "gpgam EP, the paper's scheme"
res <- NULL
for (s in seq_len(splits)) for (name in sets) {
  d <- load_set(name)
  set.seed(s)
  tr <- sample(nrow(d), round(0.9 * nrow(d)))
  M <- round(m_frac * length(tr))
  a <- authors_fit(d, tr, M, s)
  o <- ours_fit(d, tr, M, s)
  p <- ours_fit(d, tr, M, s, priors = FALSE)
  # the authors' algorithm: 250 iterations of one damped sweep and one
  # hyperparameter step (Adam here), inducing inputs learned, no priors
  q <- ours_fit(d, tr, M, s, priors = FALSE, optimizer = "adam", iterations = 250, learn_inducing = TRUE)
  res <- rbind(res, data.frame(dataset = name, split = s, M = M, method = A, a, converged = NA),
               data.frame(dataset = name, split = s, M = M, method = O, o),
               data.frame(dataset = name, split = s, M = M, method = P, p),
               data.frame(dataset = name, split = s, M = M, method = S, q))
  cat(sprintf("%-10s split %d  authors: NLL %.3f %5.2f s | defaults: NLL %.3f %5.3f s (%d it) | priors = FALSE: NLL %.3f %5.3f s (%d it) | paper's scheme: NLL %.3f %5.3f s\n",
              name, s, a$nll, a$time, o$nll, o$time, o$iterations, p$nll, p$time, p$iterations, q$nll, q$time))
}

dir.create(file.path("bench", "results"), showWarnings = FALSE)
saveRDS(res, file.path("bench", "results", "ep_authors.rds"))
by_set <- function(v, meth, f = mean) {
  r <- res[res$method == meth, ]
  tapply(r[[v]], factor(r$dataset, sets), f)
}
ratio <- function(meth) tapply(res$time[res$method == A] / res$time[res$method == meth],
                               factor(res$dataset[res$method == A], sets), mean)
conv <- function(meth) by_set("converged", meth, function(v) paste0(sum(v), "/", length(v)))
tab <- sprintf("| %s | %d | %.3f | %.3f | %.3f | %.3f / %.3f / %.3f | %.2f | %.3f | %.3f | %.1f | %.1f | %s, %s |",
               sets, as.integer(by_set("M", A)), by_set("nll", A), by_set("nll", O), by_set("nll", P),
               by_set("error", A), by_set("error", O), by_set("error", P), by_set("time", A), by_set("time", O),
               by_set("time", P), ratio(O), ratio(P), conv(O), conv(P))
tot <- function(meth) sum(res$time[res$method == meth])
md <- c("# Batch EP beside the authors' batch SEP R code (Hernandez-Lobato and Hernandez-Lobato 2016, Table 1 sets)", "",
        sprintf("Command: `Rscript bench/ep_authors.R <path to sep_batch.R> %d` (authors' code: theogf/MultiClassGPC at commit 5e92186, src/EPMultiClass/ep_code/sep_batch.R, 250 iterations, its defaults); %s, %s, one thread, %s; m = %g%% of the training rows, %d random 90/10 splits (means over splits). gpgam: `inference = \"ep\"`, `gp_control(inducing = M, threads = 1)`, with its default priors and with `priors = FALSE` (maximum evidence, as the authors' code).",
                splits, format(Sys.time(), "%Y-%m-%d"), R.version$platform, paste("BLAS", basename(utils::sessionInfo()$BLAS)),
                100 * m_frac, splits), "",
        "| data set | M | test NLL authors | NLL gpgam | NLL gpgam, priors = FALSE | test error (authors / gpgam / priors = FALSE) | s authors | s gpgam | s gpgam, priors = FALSE | time ratio, defaults | time ratio, priors = FALSE | converged (defaults, priors = FALSE) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|", tab, "",
        sprintf("All data sets and splits: mean test NLL %.3f (authors), %.3f (gpgam), %.3f (gpgam, priors = FALSE); total time %.1f s, %.2f s (%.1fx), %.2f s (%.1fx); smallest time ratio of one fit %.1fx (defaults), %.1fx (priors = FALSE).",
                mean(res$nll[res$method == A]), mean(res$nll[res$method == O]), mean(res$nll[res$method == P]),
                tot(A), tot(O), tot(A) / tot(O), tot(P), tot(A) / tot(P),
                min(res$time[res$method == A] / res$time[res$method == O]),
                min(res$time[res$method == A] / res$time[res$method == P])))
tab2 <- sprintf("| %s | %.3f | %.3f | %.3f | %.2f | %.3f | %.1f |", sets, by_set("nll", A), by_set("nll", S),
                by_set("error", S), by_set("time", A), by_set("time", S), ratio(S))
md <- c(md, "",
        "The same algorithm as the authors' code: gpgam with `gp_control(optimizer = \"adam\", iterations = 250, learn_inducing = TRUE, priors = FALSE)` (250 iterations of one damped sweep and one Adam step on the hyperparameters and inducing inputs), same fits:", "",
        "| data set | test NLL authors | test NLL gpgam, paper's scheme | test error gpgam, paper's scheme | s authors | s gpgam, paper's scheme | time ratio |",
        "|---|---|---|---|---|---|---|", tab2, "",
        sprintf("All data sets and splits: mean test NLL %.3f against %.3f; total time %.1f s against %.2f s (%.1fx).",
                mean(res$nll[res$method == A]), mean(res$nll[res$method == S]), tot(A), tot(S), tot(A) / tot(S)))
cat(md, sep = "\n")
writeLines(md, file.path("bench", "results", "ep_authors.md"))
