# Shared by bench/decoupled_gpgp.R, bench/qsgp_gpgp.R and bench/decoupled_gpgp_why.R (sourced by them):
#   load_set(name)   kin8nm, power (PBP split 0 in ../shared/data/uci) or kin40k,
#                    protein (first split of ../shared/data/uci-evans): list(tr, te, p)
#   gpgp_fit(D)      GpGp's Vecchia fit (matern25_scaledim) with test means and
#                    predictive sds from 30 conditional simulations (nugget
#                    included), timed: list(fit, mu, sd, seconds)
#   run_gpgp(set, D), run_gpgam_default(set, D, inference)
#                    one scored row each (RMSE, test log-likelihood with the
#                    noise, seconds with prediction): GpGp, and gpgam() with
#                    y ~ gp(all inputs) at the package defaults (seed 1)
#   md_table(res)    the lines of a markdown table of a data frame
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

gpgp_fit <- function(D) {
  X <- as.matrix(D$tr[, seq_len(D$p)]); Xt <- as.matrix(D$te[, seq_len(D$p)])
  t0 <- proc.time()[["elapsed"]]
  set.seed(1)
  fit <- GpGp::fit_model(D$tr$y, X, covfun_name = "matern25_scaledim", silent = TRUE)
  mu <- GpGp::predictions(fit, Xt, X_pred = matrix(1, nrow(Xt), 1))
  sims <- GpGp::cond_sim(fit, Xt, X_pred = matrix(1, nrow(Xt), 1), nsims = 30)
  list(fit = fit, mu = mu, sd = apply(sims, 1, stats::sd), seconds = proc.time()[["elapsed"]] - t0)
}

md_table <- function(res)
  c(paste("|", paste(names(res), collapse = " | "), "|"), paste0(paste(rep("|---", ncol(res)), collapse = ""), "|"),
    apply(res, 1, function(r) paste("|", paste(r, collapse = " | "), "|")))

score <- function(set, method, sec, y, mu, s)
  data.frame(data = set, method = method, n_train = NA, seconds = round(sec, 1),
             rmse = signif(sqrt(mean((y - mu)^2)), 4), test_ll = round(mean(stats::dnorm(y, mu, s, log = TRUE)), 3))

run_gpgam_default <- function(set, D, inference) {
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
