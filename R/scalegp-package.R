#' scalegp: scalable Gaussian-process models with mgcv-style formulas
#'
#' Fit Gaussian-process regression and classification models from formulas
#' such as `y ~ gp(x1, x2) + z` with [gpgam()], by sparse variational
#' inference implemented in a header-only C++ core (Eigen, RcppParallel).
#' Methods follow the conventions of `lm`, `glm` and `mgcv`: [summary()],
#' [predict()] with `se.fit`, [plot()], [logLik()], [coef()], [sigma()].
#'
#' @keywords internal
#' @useDynLib scalegp, .registration = TRUE
#' @importFrom Rcpp evalCpp
#' @importFrom RcppParallel RcppParallelLibs
#' @importFrom stats coef vcov sigma logLik nobs fitted residuals formula family predict terms AIC BIC
#'   simulate
#'   reformulate as.formula gaussian
#' @importFrom utils str
"_PACKAGE"
