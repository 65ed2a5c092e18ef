# The package help page and the allocator note.

#' scalegp: scalable Gaussian-process models with mgcv-style formulas
#'
#' Fit Gaussian-process regression and classification models from formulas
#' such as `y ~ gp(x1, x2) + z` with [gpgam()], by sparse variational
#' inference implemented in a header-only C++ core (Eigen, RcppParallel).
#' Methods follow the conventions of `lm`, `glm` and `mgcv`: [summary()],
#' [predict()] with `se.fit`, [plot()], [logLik()], [coef()], [sigma()].
#'
#' @section Memory allocator (Linux):
#' A fit allocates and frees matrices of a few megabytes in every iteration.
#' With the default settings of glibc's `malloc` such blocks go back to the
#' system when freed and are faulted in again when next allocated, which can
#' cost a large share of a fit's wall time. The first
#' [gpgam()] call of a session on a glibc system therefore sets `malloc`'s
#' `M_MMAP_THRESHOLD` to 32 MB and `M_TRIM_THRESHOLD` to 64 MB (`mallopt`)
#' for the rest of the R session: blocks up to 32 MB are reused, and up to
#' 64 MB of freed memory may stay with the process. Set
#' `options(scalegp.tune_malloc = FALSE)` before the first fit to keep the
#' system's settings.
#'
#' @keywords internal
#' @useDynLib scalegp, .registration = TRUE
#' @importFrom Rcpp evalCpp
#' @importFrom RcppParallel RcppParallelLibs
#' @importFrom stats coef vcov sigma logLik nobs fitted residuals formula family predict terms AIC BIC update anova model.matrix
#'   simulate
#'   reformulate as.formula gaussian
#' @importFrom utils str
"_PACKAGE"
