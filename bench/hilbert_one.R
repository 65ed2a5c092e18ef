# bench/hilbert_one.R: one gpgam() fit of the design of bench/gam_design.R
# with every gp() term on the Hilbert basis, one thread; prints its wall
# time and fit$timing (setup, iterations).
#   Rscript bench/hilbert_one.R [gaussian|binomial] [rows, default 1e5]
suppressMessages(library(scalegp))
source(file.path("bench", "gam_design.R"))
args <- commandArgs(TRUE)
fam <- if (length(args) >= 1) args[1] else "gaussian"
n <- if (length(args) >= 2) as.numeric(args[2]) else 1e5
set.seed(n + nchar(fam))
d <- gen(n, fam, 0)
f <- y ~ gp(x1, basis = "hilbert") + gp(x2, basis = "hilbert") + gp(x3, x4, basis = "hilbert")
tt <- system.time(fit <- gpgam(f, data = d, family = if (fam == "gaussian") gaussian() else binomial(),
                               control = gp_control(threads = 1, seed = 1, verbose = FALSE)))
cat(sprintf("%s, %g rows: %.2f s wall, %d iterations\n", fam, n, tt[["elapsed"]], fit$iterations))
print(fit$timing)
