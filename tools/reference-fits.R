# Reference fits: a fixed set of small models over every engine path
# (tests/testthat/helper-reference.R defines them and what is kept of each).
#   Rscript tools/reference-fits.R save      store the results of the installed
#                                            package in tests/testthat/reference-fits.rds
#   Rscript tools/reference-fits.R compare   refit and print, per fit, the largest
#                                            relative difference from the stored results
#                                            (0: bit-identical)
# test-reference.R runs the comparison in the test suite.
args <- commandArgs(TRUE)
mode <- if (length(args)) args[1] else "compare"
suppressMessages(library(scalegp))
root <- normalizePath(file.path(dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE))), ".."))
source(file.path(root, "tests/testthat/helper-reference.R"))
path <- file.path(root, "tests/testthat/reference-fits.rds")
res <- reference_run()
if (mode == "save") {
  commit <- tryCatch(system2("git", c("-C", root, "rev-parse", "--short", "HEAD"), stdout = TRUE), error = function(e) NA)
  attr(res, "made_by") <- list(version = as.character(utils::packageVersion("scalegp")), commit = commit,
                               date = format(Sys.time(), "%Y-%m-%d"))
  saveRDS(res, path)
  cat("stored", length(res), "reference fits in", path, "\n")
} else {
  old <- readRDS(path)
  d <- reference_diff(res, old)
  for (nm in names(d)) {
    worst <- max(d[[nm]])
    cat(sprintf("%-22s %s\n", nm, if (worst == 0) "identical" else
      paste0("differs: ", paste(sprintf("%s %.3g", names(d[[nm]])[d[[nm]] > 0], d[[nm]][d[[nm]] > 0]), collapse = ", "))))
  }
  cat(sprintf("%d of %d reference fits identical to those stored (%s)\n", sum(vapply(d, max, 0) == 0), length(d),
              paste(unlist(attr(old, "made_by")), collapse = " ")))
}
