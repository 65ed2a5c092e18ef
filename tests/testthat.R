library(testthat)
library(scalegp)

test_check("scalegp")
