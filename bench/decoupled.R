# inference = "decoupled" (Cheng and Boots 2017) against inference = "vi" on
# kin40k (8 inputs, first split of ../shared/data/uci-evans: 36000 training
# and 4000 test rows), one run each in one process ("compare"); and the time
# per iteration as the number of mean bases grows ("scaling").
#   Rscript bench/decoupled.R [iterations] [compare|scaling|both]
# Writes bench/results/decoupled.md and bench/results/decoupled_scaling.md.
suppressPackageStartupMessages(library(scalegp))
args <- commandArgs(TRUE)
iters <- if (length(args)) as.integer(args[1]) else 1000L
part <- if (length(args) > 1) args[2] else "both"
dir <- file.path("..", "shared", "data", "uci-evans", "kin40k")
if (!dir.exists(dir)) dir <- file.path("..", "..", "shared", "data", "uci-evans", "kin40k")
D <- utils::read.csv(gzfile(file.path(dir, "data.csv.gz")), header = FALSE)
test <- utils::read.csv(gzfile(file.path(dir, "test_mask.csv.gz")), header = FALSE)[[1]] == 1
names(D) <- c(paste0("x", 1:8), "y")
tr <- D[!test, ]
te <- D[test, ]
fml <- y ~ gp(x1, x2, x3, x4, x5, x6, x7, x8)

# One row of the table: a fit that took `sec` seconds (prediction excluded), scored on the test rows.
score <- function(label, fit, sec) {
  p <- predict(fit, te, se.fit = TRUE)
  s <- sqrt(p$se.fit^2 + fit$params$sigma^2)
  data.frame(method = label, seconds = round(sec, 1), iterations = fit$iterations,
             per_iteration_ms = round(1000 * fit$timing[["per_iteration"]], 1),
             rmse = round(sqrt(mean((te$y - p$fit)^2)), 4), nlpd = round(-mean(stats::dnorm(te$y, p$fit, s, log = TRUE)), 4),
             elbo = round(as.numeric(logLik(fit)), 1), sigma = signif(fit$params$sigma, 4))
}

run <- function(label, inference, ...) {
  t0 <- proc.time()[["elapsed"]]
  fit <- gpgam(fml, data = tr, inference = inference, control = gp_control(verbose = FALSE, seed = 1, ...))
  score(label, fit, proc.time()[["elapsed"]] - t0)
}

# The bench's own pilot (before decoupled_options(pilot) existed): the kernel
# of a full-batch fit on 4096 training rows (inference = "vi", M = 512,
# L-BFGS), kept fixed in a decoupled fit of all rows (M_alpha = 4096, 20
# iterations, the exact mean at the end) whose noise is refitted to the
# decoupled ELBO beside the exact mean; seconds include the subset fit.
pilot_noise_refitted <- function() {
  t0 <- proc.time()[["elapsed"]]
  set.seed(1)
  f0 <- gpgam(fml, data = tr[sample(nrow(tr), 4096), ], control = gp_control(verbose = FALSE, seed = 1, inducing = 512))
  g <- f0$params$gp[[1]]
  fx <- stats::as.formula(sprintf("y ~ gp(x1, x2, x3, x4, x5, x6, x7, x8, lengthscale = c(%s), variance = %.17g)",
                                  paste(sprintf("%.17g", g$lengthscale), collapse = ", "), g$variance))
  fit <- gpgam(fx, data = tr, inference = "decoupled",
               control = gp_control(verbose = FALSE, seed = 1, inducing = 128, mean_basis = 4096, add_basis = 4096,
                                    iterations = 20, fixed = "kernel", sigma = f0$params$sigma, pilot = 0))
  score(paste("bench pilot: kernel of a vi fit (M = 512) of 4096 rows, decoupled M_beta = 128,",
              "M_alpha = 4096, 20 iterations, exact mean and noise refitted"), fit, proc.time()[["elapsed"]] - t0)
}

dir.create(file.path("bench", "results"), showWarnings = FALSE)
if (part %in% c("compare", "both")) {
res <- rbind(
  run("vi, M = 512, batches of 1024, learning_rate 0.01", "vi", inducing = 512, batch_size = 1024, iterations = iters),
  run("vi, M = 128, batches of 1024, learning_rate 0.01", "vi", inducing = 128, batch_size = 1024, iterations = iters),
  run("decoupled, M_beta = 128, M_alpha = 4096, learning_rate 0.01, Adam only (pilot = 0, mean_solve = FALSE)",
      "decoupled", inducing = 128, mean_basis = 4096, iterations = iters, mean_solve = FALSE, pilot = 0),
  run("decoupled, M_beta = 128, M_alpha = 4096, learning_rate 0.01, exact mean at the end (pilot = 0)", "decoupled",
      inducing = 128, mean_basis = 4096, iterations = iters, pilot = 0),
  run("decoupled, M_beta = 128, M_alpha = 4096, learning_rate 0.1, exact mean at the end (pilot = 0)", "decoupled",
      inducing = 128, mean_basis = 4096, iterations = iters, learning_rate = 0.1, pilot = 0),
  run("decoupled, package defaults: pilot of 4096 rows (M = 512), then M_beta = 512, M_alpha = 4714 in closed form",
      "decoupled"),
  run("decoupled, pilot of 4096 rows with M = 128, then M_beta = 128, M_alpha = 4096 in closed form", "decoupled",
      inducing = 128, mean_basis = 4096),
  pilot_noise_refitted())
print(res)

out <- c("# Decoupled variational GP against the SVGP engine (kin40k)", "",
         sprintf("`Rscript bench/decoupled.R %d`, %s, one run each on this machine (%d threads).", iters,
                 format(Sys.Date()), RcppParallel::defaultNumThreads()),
         "kin40k, first split of `../shared/data/uci-evans` (36000 training, 4000 test rows), one gp() over the 8 inputs.",
         "RMSE and NLPD (Gaussian predictive with the noise) on the test rows; ELBO on the training rows.",
         paste("\"pilot = 0\": the paper's algorithm, Adam steps on minibatches (\"exact mean at the end\":",
               "decoupled_options(mean_solve), the default there; \"Adam only\": mean_solve = FALSE).  Otherwise",
               "(the package default for Gaussian fits on minibatches) the kernel and noise come from a pilot fit",
               "(decoupled_options(pilot)) and the mean and covariance are their closed-form optimum on all rows;",
               "the seconds include the pilot."), "",
         paste("|", paste(names(res), collapse = " | "), "|"), paste0(paste(rep("|---", ncol(res)), collapse = ""), "|"),
         apply(res, 1, function(r) paste("|", paste(r, collapse = " | "), "|")))
writeLines(out, file.path("bench", "results", "decoupled.md"))
}

if (part %in% c("scaling", "both")) {
# time per iteration against M_alpha: 60 iterations of minibatches of 1024
# rows, all bases placed at the first; natural steps of 0.5, so that Adam
# (with the gradient pass over the bases) runs from iteration 11 on
scale <- do.call(rbind, lapply(c(1024, 4096, 16384, 65536), function(Ma) {
  fit <- gpgam(fml, data = tr, inference = "decoupled",
               control = gp_control(verbose = FALSE, seed = 1, inducing = 128, mean_basis = Ma, iterations = 60,
                                    add_basis = Ma, natgrad_step = 0.5, pilot = 0))
  data.frame(M_alpha = Ma, placed = fit$mean_basis[["inducing"]] + fit$mean_basis[["active"]],
             per_iteration_ms = round(1000 * fit$timing[["per_iteration"]], 1))
}))
print(scale)
writeLines(c("# Decoupled variational GP: time per iteration against the number of mean bases (kin40k)", "",
             sprintf("`Rscript bench/decoupled.R %d scaling`, %s, one run each on this machine (%d threads).", iters,
                     format(Sys.Date()), RcppParallel::defaultNumThreads()),
             paste("M_beta = 128, minibatches of 1024 rows, 60 iterations (10 without the Adam step), all bases",
                   "placed at the first iteration; `placed` is the number of mean bases the data allowed",
                   "(distinct input rows plus M_beta)."), "",
             "| M_alpha | placed | ms per iteration |", "|---|---|---|",
             apply(scale, 1, function(r) sprintf("| %d | %d | %s |", as.integer(r[1]), as.integer(r[2]), r[3]))),
           file.path("bench", "results", "decoupled_scaling.md"))
}
