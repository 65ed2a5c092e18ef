# One GP over many inputs: inference = "qsgp" and "vi" (package defaults, the
# package's default Matern 5/2 kernel) against GpGp's Vecchia approximation
# (Guinness 2018; fit_model(covfun_name = "matern25_scaledim"), predictive sd
# from 30 conditional simulations, nugget included) on kin8nm and power-plant
# (PBP split 0 in ../shared/data/uci) and kin40k and protein (first split of
# ../shared/data/uci-evans), as bench/decoupled_gpgp.R does for "decoupled".
# One run each, in one process.  Needs GpGp and fields.
#   Rscript bench/qsgp_gpgp.R [sets]     e.g. kin8nm,power
# Writes bench/results/qsgp_gpgp.md.
suppressPackageStartupMessages({ library(scalegp); library(GpGp) })
args <- commandArgs(TRUE)
sets <- if (length(args)) strsplit(args[1], ",")[[1]] else c("kin8nm", "power", "kin40k", "protein")
source(file.path("bench", "gpgp_sets.R"))  # load_set(), gpgp_fit(), md_table()

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
  r$detail <- if (inference == "qsgp") sprintf("%d iterations (stochastic: no stationary-point test)", fit$iterations)
              else sprintf("%d iterations, %s", fit$iterations, if (isTRUE(fit$converged)) "converged" else "not converged")
  r
}

run_gpgp <- function(set, D) {
  g <- gpgp_fit(D)
  r <- score(set, "GpGp matern25_scaledim", g$seconds, D$te$y, g$mu, g$sd)
  r$detail <- sprintf("Vecchia m = 30, %s", if (isTRUE(g$fit$conv)) "converged" else "not converged")
  r
}

res <- NULL
for (set in sets) {
  D <- load_set(set)
  for (r in list(run_gpgp(set, D), run_gpgam(set, D, "vi"), run_gpgam(set, D, "qsgp"))) {
    r$n_train <- nrow(D$tr)
    print(r)
    res <- rbind(res, r)
  }
}
dir.create(file.path("bench", "results"), showWarnings = FALSE)
commit <- tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) NA_character_)
writeLines(c("# One GP over all inputs: qsgp and vi against GpGp (Vecchia)", "",
             sprintf("`Rscript bench/qsgp_gpgp.R`, %s, scalegp commit %s, one run each on this machine (%d threads), package defaults.",
                     format(Sys.Date()), commit, RcppParallel::defaultNumThreads()),
             "Seconds include prediction; test log-likelihood per row on the original scale, predictive sd with the noise.", "",
             md_table(res)),
           file.path("bench", "results", "qsgp_gpgp.md"))
