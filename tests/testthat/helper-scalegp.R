# Shared helpers for the scalegp tests: reference kernels written in plain R
# and an absolute-tolerance expectation.

# Largest absolute difference must be below tol (expect_equal() is relative).
expect_close <- function(object, expected, tol, label = NULL) {
  object <- unname(as.numeric(object))
  expected <- unname(as.numeric(expected))
  expect_equal(length(object), length(expected))
  err <- max(abs(object - expected))
  expect_true(is.finite(err) && err < tol,
              label = label %||% sprintf("max abs error %.3g < %.3g", err, tol))
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# Many tests cap the iterations to stay fast: gpgam()'s warning that such a
# fit did not converge is off here (test-inference.R checks it with the
# option at its default).
options(scalegp.warn_convergence = FALSE)

# Scaled squared distances between the rows of A and B (lengthscale per column).
sqdist_scaled <- function(A, B, ls) {
  A <- sweep(as.matrix(A), 2, ls, "/")
  B <- sweep(as.matrix(B), 2, ls, "/")
  pmax(outer(rowSums(A^2), rowSums(B^2), "+") - 2 * A %*% t(B), 0)
}

k_se <- function(A, B, ls, v) v * exp(-0.5 * sqdist_scaled(A, B, ls))

k_matern32 <- function(A, B, ls, v) {
  r <- sqrt(sqdist_scaled(A, B, ls))
  v * (1 + sqrt(3) * r) * exp(-sqrt(3) * r)
}

k_matern52 <- function(A, B, ls, v) {
  r <- sqrt(sqdist_scaled(A, B, ls))
  v * (1 + sqrt(5) * r + 5 / 3 * r^2) * exp(-sqrt(5) * r)
}

# Log density of N(0, C) at r.
ldmvnorm0 <- function(r, C) {
  L <- chol(C)
  a <- backsolve(L, r, transpose = TRUE)
  -0.5 * (sum(a^2) + 2 * sum(log(diag(L))) + length(r) * log(2 * pi))
}

# Quiet control for tests.
qctl <- function(...) gp_control(verbose = FALSE, ...)

# Per element: |a - b| <= tol |b|.
expect_rel <- function(object, expected, tol, label) {
  object <- unname(as.numeric(object))
  expected <- unname(as.numeric(expected))
  expect_equal(length(object), length(expected))
  err <- max(abs(object - expected) / abs(expected))
  expect_true(is.finite(err) && err <= tol, label = sprintf("%s: max relative error %.3g <= %.3g", label, err, tol))
}
