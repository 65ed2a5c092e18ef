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
source(file.path("bench", "gpgp_sets.R"))  # load_set(), run_gpgp(), run_gpgam_default(), md_table()

res <- NULL
for (set in sets) {
  D <- load_set(set)
  for (r in list(run_gpgp(set, D), run_gpgam_default(set, D, "vi"), run_gpgam_default(set, D, "decoupled"))) {
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
             md_table(res)),
           file.path("bench", "results", "decoupled_gpgp.md"))
