# FLOP rate of the minibatch gradient step (ELBO + natural-gradient statistics
# + all hyperparameter gradients) as a fraction of an Eigen GEMM of the same
# shape, measured in the same process; threads 1 and 2; with R's default
# compiler flags and with -march=native.  Also the 1 -> 2 thread speed-up of a
# whole gpgam() fit.
#   Rscript bench/efficiency.R        (from the repository root)
# Writes bench/results/efficiency.md.
r_config <- function(x) system2(file.path(R.home("bin"), "R"), c("CMD", "config", x), stdout = TRUE)
eigen <- system.file("include", package = "RcppEigen")
exe <- file.path(tempdir(), c("eff-default", "eff-native"))
flags <- list(r_config("CXXFLAGS"), c(r_config("CXXFLAGS"), "-march=native"))
cxx <- strsplit(r_config("CXX"), " ")[[1]]  # e.g. "g++ -std=gnu++14"
for (i in 1:2) {
  st <- system2(cxx[1], c(cxx[-1], "-std=c++17", "-DNDEBUG", flags[[i]], "-Iinst/include", paste0("-I", eigen),
                          "bench/efficiency.cpp", "-o", exe[i], "-lpthread"), stderr = FALSE)
  if (st != 0) stop("compiling bench/efficiency.cpp failed")
}
rows <- NULL
for (i in 1:2) for (M in c(100, 500)) for (th in 1:2) {
  out <- system2(exe[i], c(M, 2000, th, if (M == 100) 40 else 5), stdout = TRUE)
  v <- as.numeric(sub(".*=", "", regmatches(out, gregexpr("(eval_ms|gflops|gemm_gflops|ratio)=[0-9.]+", out))[[1]]))
  rows <- rbind(rows, data.frame(build = c("default -O2", "-march=native")[i], M = M, batch = 2000, threads = th,
                                 step_ms = v[1], step_gflops = v[2], gemm_gflops = v[3], ratio = v[4]))
  cat(out, "\n")
}
# whole-fit thread speed-up: N = 1e5, D = 8, M = 100, 100 minibatch iterations
suppressMessages(library(scalegp))
set.seed(1)
n <- 1e5
X <- matrix(runif(n * 8), n, dimnames = list(NULL, paste0("x", 1:8)))
d <- data.frame(X, y = sin(3 * X[, 1]) + X[, 2]^2 + rnorm(n, sd = 0.1))
f <- y ~ gp(x1, x2, x3, x4, x5, x6, x7, x8)
tm <- sapply(1:2, function(th) {
  fit <- gpgam(f, data = d, control = gp_control(inducing = 100, batch_size = 2000, iterations = 100, tol = 1e-12,
                                                  threads = th, seed = 1, verbose = FALSE))
  fit$timing[c("iterations", "final")]
})
md <- c("| build | M | batch | threads | step (ms) | step GFLOP/s | GEMM GFLOP/s | step / GEMM |",
        "|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %d | %d | %d | %.1f | %.2f | %.2f | %.2f |", rows$build, rows$M, rows$batch, rows$threads,
                rows$step_ms, rows$step_gflops, rows$gemm_gflops, rows$ratio),
        "",
        sprintf("Whole gpgam() fit, N = 1e5, D = 8, M = 100, 100 iterations of batch 2000: iterations %.2f s (1 thread) vs %.2f s (2 threads), speed-up %.2fx; final full-data passes %.2f s vs %.2f s, speed-up %.2fx.",
                tm[1, 1], tm[1, 2], tm[1, 1] / tm[1, 2], tm[2, 1], tm[2, 2], tm[2, 1] / tm[2, 2]),
        "", sprintf("Measured %s on %s (%d cores).", format(Sys.time(), "%Y-%m-%d"), R.version$platform,
                    parallel::detectCores()))
writeLines(md, file.path("bench", "results", "efficiency.md"))
writeLines(md)
