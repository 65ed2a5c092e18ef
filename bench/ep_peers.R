# GP classification on seed 001's Table 1 data sets: scalegp's EP against
# the peers statisticians use, on the same random 90/10 splits as
# inst/replication/seed001_table1.R:
#   gplite   EP with a FITC approximation (same number of inducing points,
#            SE kernel, probit), hyperparameters by gp_optim();
#   kernlab  gausspr(), a full GP classifier (RBF kernel, sigma by sigest).
# Test NLL, test error and training time; a gplite fit that takes longer
# than `limit` seconds is stopped and recorded as NA.
#
#   Rscript bench/ep_peers.R [splits] [m] [limit]      (run from the package root)
library(scalegp)
args <- commandArgs(trailingOnly = TRUE)
splits <- if (length(args) >= 1) as.integer(args[1]) else 5L
m <- if (length(args) >= 2) as.numeric(args[2]) else 0.15
limit <- if (length(args) >= 3) as.numeric(args[3]) else 600
source(file.path("inst", "replication", "seed001_data.R"))  # load_set(), gp_formula()
sets <- c("Australian", "Breast", "Crabs", "Heart", "Ionosphere", "Pima", "Sonar")

scores <- function(p, y, time) {
  p <- pmin(pmax(p, 1e-12), 1 - 1e-12)
  data.frame(nll = -mean(ifelse(y == 1, log(p), log1p(-p))), error = mean((p > 0.5) != (y == 1)), time = time)
}
timed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  setTimeLimit(elapsed = limit, transient = TRUE)
  on.exit(setTimeLimit(elapsed = Inf))
  val <- tryCatch(expr, error = function(e) NULL)
  list(value = val, time = proc.time()[["elapsed"]] - t0)
}

methods <- list(
  scalegp_ep = function(tr, te, M) {
    fo <- gp_formula(tr)
    r <- timed(gpgam(fo, data = tr, family = stats::binomial("probit"), inference = "ep",
                     control = gp_control(inducing = M, iterations = 250, threads = 1, seed = 1, verbose = FALSE,
                                          optimizer = "adam", learn_inducing = TRUE, priors = FALSE)))
    list(p = predict(r$value, te, type = "response"), time = r$time)
  },
  gplite_ep = function(tr, te, M) {
    x <- scale(as.matrix(tr[names(tr) != "y"]))
    xt <- scale(as.matrix(te[names(te) != "y"]), attr(x, "scaled:center"), attr(x, "scaled:scale"))
    r <- timed(suppressWarnings(gplite::gp_optim(
      gplite::gp_init(cfs = gplite::cf_sexp(), lik = gplite::lik_bernoulli(link = "probit"),
                      method = gplite::method_fitc(num_inducing = M), approx = gplite::approx_ep()),
      x, tr$y, verbose = FALSE)))
    list(p = if (is.null(r$value)) NA else gplite::gp_pred(r$value, xt, transform = TRUE)$mean, time = r$time)
  },
  kernlab_gausspr = function(tr, te, M) {
    r <- timed(kernlab::gausspr(factor(y) ~ ., data = tr, type = "classification", kernel = "rbfdot"))
    list(p = if (is.null(r$value)) NA else kernlab::predict(r$value, te, type = "probabilities")[, "1"], time = r$time)
  })

res <- NULL
for (s in seq_len(splits)) for (name in sets) {
  d <- load_set(name)
  set.seed(s)  # the same split as the Table 1 replication
  idx <- sample(nrow(d), round(0.9 * nrow(d)))
  M <- round(m * length(idx))
  for (meth in names(methods)) {
    r <- methods[[meth]](d[idx, ], d[-idx, ], M)
    row <- cbind(data.frame(dataset = name, split = s, method = meth, M = M),
                 if (anyNA(r$p)) data.frame(nll = NA, error = NA, time = r$time) else scores(r$p, d$y[-idx], r$time))
    res <- rbind(res, row)
    cat(sprintf("%-10s split %d %-16s NLL %6.3f err %.3f %7.2f s\n", name, s, meth, row$nll, row$error, row$time))
  }
}
dir.create(file.path("bench", "results"), showWarnings = FALSE)
saveRDS(res, file.path("bench", "results", "ep_peers.rds"))
agg <- stats::aggregate(cbind(nll, error, time) ~ dataset + method, data = res, FUN = mean, na.action = stats::na.pass)
tab <- stats::reshape(agg, idvar = "dataset", timevar = "method", direction = "wide")
fmt <- function(x) formatC(x, digits = 3, format = "f")
md <- c(sprintf("# GP classification peers on the data sets of Table 1 of Hernandez-Lobato and Hernandez-Lobato (2016) (m = %g%%, %d splits, mean)", 100 * m, splits), "",
        sprintf("Command: `Rscript bench/ep_peers.R %d %g %g`; %s; gplite fits over %g s count as NA.", splits, m, limit,
                format(Sys.time(), "%Y-%m-%d"), limit), "",
        paste("|", paste(names(tab), collapse = " | "), "|"), paste0(paste(rep("|---", ncol(tab)), collapse = ""), "|"),
        apply(tab, 1, function(r) paste("|", r[1], "|", paste(fmt(as.numeric(r[-1])), collapse = " | "), "|")))
# mean training time over data sets and splits, beside the paper's Table 1 time row
paper <- c(`0.15` = 17, `0.25` = 37, `0.5` = 130)[[format(m)]]
tm <- tapply(res$time, res$method, mean, na.rm = TRUE)
md <- c(md, "", sprintf("Mean training time (s) over data sets and splits: %s; the paper's SEP (its R code): %g s.",
                        paste(sprintf("%s %.2f", names(tm), tm), collapse = ", "), paper))
writeLines(md, file.path("bench", "results", "ep_peers.md"))
cat(md, sep = "\n")
