# The exact optimum of the random-feature weight-space model that a
# converged inference = "qsgp" fit reaches: ridge regression of y on m
# random Fourier features of the SE-ARD kernel (frequencies N(0, 1 / ls^2),
# drawn after set.seed(1)), kernel variance v, noise sd sg, solved directly.
# Returns the predictions at the rows of Xt.  Used by bench/qsgp_kin40k_why.R
# and bench/qsgp_paper_cost.R.
rff_ridge <- function(X, y, Xt, m, ls, v, sg) {
  set.seed(1)
  W <- matrix(stats::rnorm(ncol(X) * m / 2), ncol(X)) / ls
  feat <- function(X) {
    T <- X %*% W
    cbind(cos(T), sin(T)) * sqrt(v / (m / 2))
  }
  P <- feat(X)
  ym <- mean(y)
  w <- solve(crossprod(P) + diag(sg^2, m), crossprod(P, y - ym))
  ym + drop(feat(Xt) %*% w)
}
