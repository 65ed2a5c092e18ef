# stamp(): the package version, the commit of the working tree and the date,
# stored with every replication result so that a vignette can say what made
# its numbers (sourced by the scripts in inst/replication/ and
# bench/ep_large.R).  The commit is that of the tree the script runs in:
# install the package from the same tree.
stamp <- function() {
  list(version = as.character(utils::packageVersion("scalegp")),
       commit = tryCatch(suppressWarnings(system("git rev-parse --short HEAD", intern = TRUE, ignore.stderr = TRUE))[1],
                         error = function(e) NA_character_),
       date = format(Sys.Date()))
}
