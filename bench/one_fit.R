# bench/one_fit.R: one gpgam() fit of the design of bench/gam_design.R,
# gp(x1) + gp(x2) + gp(x3, x4) with every term on the basis named; prints
# its wall time, evaluations, objective and fit$timing (setup, iterations).
#   Rscript bench/one_fit.R [gaussian|binomial] [rows, default 1e5] [hilbert|inducing] [threads, default 1]
suppressMessages(library(scalegp))
source(file.path("bench", "gam_design.R"))
args <- commandArgs(TRUE)
fam <- if (length(args) >= 1) args[1] else "gaussian"
n <- if (length(args) >= 2) as.numeric(args[2]) else 1e5
basis <- if (length(args) >= 3) args[3] else "hilbert"
threads <- if (length(args) >= 4) as.integer(args[4]) else 1L
set.seed(n + nchar(fam))
d <- gen(n, fam, 0)
f <- as.formula(sprintf('y ~ gp(x1, basis = "%s") + gp(x2, basis = "%s") + gp(x3, x4, basis = "%s")', basis, basis, basis))
tt <- system.time(fit <- gpgam(f, data = d, family = if (fam == "gaussian") gaussian() else binomial(),
                               control = gp_control(threads = threads, seed = 1, verbose = FALSE)))
cat(sprintf("%s, %g rows, %s basis, %d thread(s): %.2f s wall, %d iterations, %d evaluations, objective %.6f\n",
            fam, n, basis, threads, tt[["elapsed"]], fit$iterations, fit$evaluations, fit$objective))
print(fit$timing)
