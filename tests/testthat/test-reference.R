# The reference fits (helper-reference.R) against the results stored by
# tools/reference-fits.R: a change of structure changes no fit.  Stored on
# this kind of machine; the tolerance allows only rounding differences.
test_that("every reference fit equals its stored result", {
  old <- readRDS(test_path("reference-fits.rds"))
  new <- reference_run()
  expect_setequal(names(new), names(old))
  d <- reference_diff(new, old)
  for (nm in names(d)) for (q in names(d[[nm]]))
    expect_true(d[[nm]][[q]] <= 1e-9, label = sprintf("%s: %s differs by %.3g", nm, q, d[[nm]][[q]]))
})
