# Iterations and evaluations (of the objective and its gradient) of one
# full-batch gpgam() fit on the design of bench/gam_vs_mgcv.R
# (bench/gam_design.R): the work of the optimiser, which does not depend on
# the machine's timing noise.
#   Rscript bench/fit_evaluations.R [n] [family]     (defaults 1e5 gaussian)
# Prints one line; nothing is written.
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
family <- if (length(args) >= 2) args[2] else "gaussian"
source(file.path("bench", "gam_design.R"))  # ftrue(), gen()
set.seed(n + nchar(family))
d <- gen(n, family, 0.8)
fam <- if (family == "gaussian") gaussian() else binomial()
t <- system.time(fit <- gpgam(y ~ gp(x1) + gp(x2) + gp(x3, x4), data = d, family = fam,
                              control = gp_control(threads = 2, seed = 1, verbose = FALSE)))[["elapsed"]]
cat(sprintf("n = %g %s: %d iterations, %d evaluations, ELBO %.4f, converged %s, largest gradient %.3g, %.2f s\n",
            n, family, fit$iterations, fit$evaluations, fit$elbo, fit$converged, max(abs(fit$gradient)), t))
