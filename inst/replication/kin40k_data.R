# kin40k with the splits of the uci_datasets collection that Evans and Nair
# (2018) used, in ../shared/data/uci-evans/kin40k (or
# $SCALEGP_DATA/uci-evans/kin40k): read_kin40k(k) gives the training and test
# rows of split k (test rows: column k of test_mask.csv.gz) as data frames
# with inputs x1, ..., x8 and response y; read_uci_evans(name, k) the same
# for the collection's other sets.  Sourced by seed003_table2.R and
# bench/qsgp_kin40k_why.R.
read_kin40k <- function(k = 1) read_uci_evans("kin40k", k)

# The same for any set of that collection in ../shared/data/uci-evans
# (kin40k, protein, keggdirected, keggundirected, elevators, pol, bike): the
# last column is the response y, the others the inputs x1, ..., xd.
read_uci_evans <- function(name, k = 1) {
  dir <- file.path(Sys.getenv("SCALEGP_DATA", "../shared/data"), "uci-evans", name)
  if (!dir.exists(dir)) stop(name, " not found in ", dir, "; set SCALEGP_DATA")
  dat <- utils::read.csv(file.path(dir, "data.csv.gz"), header = FALSE)
  mask <- utils::read.csv(file.path(dir, "test_mask.csv.gz"), header = FALSE)
  names(dat) <- c(paste0("x", seq_len(ncol(dat) - 1)), "y")
  test <- mask[[k]] == 1
  list(train = dat[!test, ], test = dat[test, ])
}
