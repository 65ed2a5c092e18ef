# The PBP regression splits (Hernandez-Lobato and Adams 2015) in
# ../shared/data/uci (or $SCALEGP_SHARED/data/uci): read_split(dir, k) gives
# the training and test rows of split k of the set in directory `dir`
# (e.g. "bostonHousing") as data frames with inputs x1, x2, ... and response
# y; inputs constant on the training rows are dropped (naval has two), as
# PBP's code does.  pbp_sets: the directory of each set, by the short names
# the replication and bench scripts use.
shared <- Sys.getenv("SCALEGP_SHARED", file.path("..", "shared"))
pbp_sets <- c(boston = "bostonHousing", concrete = "concrete", energy = "energy", kin8nm = "kin8nm",
              naval = "naval-propulsion-plant", power = "power-plant", protein = "protein-tertiary-structure",
              wine = "wine-quality-red", yacht = "yacht")
read_split <- function(dir, k) {
  dir <- file.path(shared, "data", "uci", dir)
  X <- as.matrix(utils::read.table(file.path(dir, "data.txt")))
  f <- scan(file.path(dir, "index_features.txt"), quiet = TRUE) + 1
  t <- scan(file.path(dir, "index_target.txt"), quiet = TRUE) + 1
  d <- data.frame(X[, f, drop = FALSE])
  names(d) <- paste0("x", seq_along(f))
  d$y <- X[, t]
  tr <- scan(file.path(dir, sprintf("index_train_%d.txt", k)), quiet = TRUE) + 1
  te <- scan(file.path(dir, sprintf("index_test_%d.txt", k)), quiet = TRUE) + 1
  keep <- vapply(d[tr, names(d) != "y", drop = FALSE], function(v) stats::sd(v) > 0, TRUE)
  d <- d[, c(names(keep)[keep], "y")]
  list(train = d[tr, ], test = d[te, ])
}
