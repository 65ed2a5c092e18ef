# Shared by bench/prompt_vs_mgcv.R, bench/kernel_default.R and bench/families.R
# (sourced by them):
#   nlpd(family, y, eta, se, sigma)  mean -log predictive density of y under a
#                    latent N(eta, se^2) (and Gaussian noise sd sigma), the same
#                    way for both packages; family "gaussian", "binomial"
#                    (logit), "probit" or "poisson"
#   term_scores(est, se, truth)  RMSE of a term against the truth, both centred
#                    over the same rows, and the share of rows where its 95%
#                    band covers the centred truth
nlpd <- function(family, y, eta, se, sigma = 1) {
  lik <- switch(family, gaussian = "gaussian", binomial = "logit", probit = "probit", poisson = "poisson")
  -mean(scalegp:::.lik_predictive(lik, y, eta, se^2, sigma^2, 20)[, 1])
}

term_scores <- function(est, se, truth) {
  truth <- truth - mean(truth)
  est <- est - mean(est)
  c(rmse = sqrt(mean((est - truth)^2)), cover = mean(abs(est - truth) <= 1.96 * se))
}
