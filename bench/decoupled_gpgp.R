# One GP over many inputs: inference = "decoupled" and "vi" (package defaults)
# against GpGp's Vecchia approximation (Guinness 2018; fit_model(covfun_name =
# "matern25_scaledim"), predictive sd from 30 conditional simulations, nugget
# included) on kin8nm and power-plant (PBP split 0 in ../shared/data/uci) and
# kin40k and protein (first split of ../shared/data/uci-evans).  One run each,
# in one process.  Needs GpGp and fields (install.packages(c("GpGp", "fields"))).
#   Rscript bench/decoupled_gpgp.R [sets]     e.g. kin8nm,power
# Writes bench/results/decoupled_gpgp.md.
suppressPackageStartupMessages({ library(scalegp); library(GpGp) })
args <- commandArgs(TRUE)
sets <- if (length(args)) strsplit(args[1], ",")[[1]] else c("kin8nm", "power", "kin40k", "protein")
root <- Sys.getenv("SCALEGP_DATA", file.path("..", "shared", "data"))

load_set <- function(name) {
  if (name %in% c("kin8nm", "power")) {
    dir <- file.path(root, "uci", c(kin8nm = "kin8nm", power = "power-plant")[[name]])
    dat <- as.matrix(utils::read.table(file.path(dir, "data.txt")))
    fi <- scan(file.path(dir, "index_features.txt"), quiet = TRUE) + 1
    ti <- scan(file.path(dir, "index_target.txt"), quiet = TRUE) + 1
    d <- as.data.frame(dat[, c(fi, ti)])
    test <- seq_len(nrow(d)) %in% (scan(file.path(dir, "index_test_0.txt"), quiet = TRUE) + 1)
  } else {
    dir <- file.path(root, "uci-evans", name)
    d <- utils::read.csv(gzfile(file.path(dir, "data.csv.gz")), header = FALSE)
    test <- utils::read.csv(gzfile(file.path(dir, "test_mask.csv.gz")), header = FALSE)[[1]] == 1
  }
  p <- ncol(d) - 1
  names(d) <- c(paste0("x", seq_len(p)), "y")
  list(tr = d[!test, ], te = d[test, ], p = p)
}

score <- function(set, method, sec, y, mu, s)
  data.frame(data = set, method = method, n_train = NA, seconds = round(sec, 1),
             rmse = signif(sqrt(mean((y - mu)^2)), 4), test_ll = round(mean(stats::dnorm(y, mu, s, log = TRUE)), 3))

run_gpgam <- function(set, D, inference) {
  fml <- stats::as.formula(paste("y ~ gp(", paste0("x", seq_len(D$p), collapse = ", "), ")"))
  t0 <- proc.time()[["elapsed"]]
  fit <- gpgam(fml, data = D$tr, inference = inference, control = gp_control(verbose = FALSE, seed = 1))
  p <- predict(fit, D$te, se.fit = TRUE)
  sec <- proc.time()[["elapsed"]] - t0
  r <- score(set, paste0("gpgam ", inference), sec, D$te$y, p$fit, sqrt(p$se.fit^2 + fit$params$sigma^2))
  r$detail <- sprintf("%d iterations, %s", fit$iterations, if (isTRUE(fit$converged)) "converged" else "not converged")
  r
}

run_gpgp <- function(set, D) {
  X <- as.matrix(D$tr[, seq_len(D$p)]); Xt <- as.matrix(D$te[, seq_len(D$p)])
  t0 <- proc.time()[["elapsed"]]
  set.seed(1)
  fit <- GpGp::fit_model(D$tr$y, X, covfun_name = "matern25_scaledim", silent = TRUE)
  mu <- GpGp::predictions(fit, Xt, X_pred = matrix(1, nrow(Xt), 1))
  sims <- GpGp::cond_sim(fit, Xt, X_pred = matrix(1, nrow(Xt), 1), nsims = 30)
  sec <- proc.time()[["elapsed"]] - t0
  r <- score(set, "GpGp matern25_scaledim", sec, D$te$y, mu, apply(sims, 1, stats::sd))
  r$detail <- sprintf("Vecchia m = 30, %s", if (isTRUE(fit$conv)) "converged" else "not converged")
  r
}

res <- NULL
for (set in sets) {
  D <- load_set(set)
  for (r in list(run_gpgp(set, D), run_gpgam(set, D, "vi"), run_gpgam(set, D, "decoupled"))) {
    r$n_train <- nrow(D$tr)
    print(r)
    res <- rbind(res, r)
  }
}
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(c("# One GP over all inputs: decoupled and vi against GpGp (Vecchia)", "",
             sprintf("`Rscript bench/decoupled_gpgp.R`, %s, one run each on this machine (%d threads), package defaults.",
                     format(Sys.Date()), RcppParallel::defaultNumThreads()),
             "Seconds include prediction; test log-likelihood per row on the original scale, predictive sd with the noise.", "",
             paste("|", paste(names(res), collapse = " | "), "|"), paste0(paste(rep("|---", ncol(res)), collapse = ""), "|"),
             apply(res, 1, function(r) paste("|", paste(r, collapse = " | "), "|"))),
           file.path("bench", "results", "decoupled_gpgp.md"))
