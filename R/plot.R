#' Plot a gpgam fit
#'
#' `which = "terms"` draws every `gp()` term: a 1-D term as its posterior mean
#' with +/- 2 standard-error bands and a rug of the data; a 2-D term as a
#' filled image of the posterior mean with its contours (solid) and contours of
#' the standard error (dashed, grey); a term over more inputs as one slice per
#' input, the other inputs held at their means; a factor random effect as its
#' level effects with +/- 2 standard-error bars.  Terms are the GP components
#' alone (without the intercept).  `which = "trace"` plots the ELBO or EP log evidence (its
#' minibatch estimate) per iteration.
#'
#' @param x a `gpgam` fit.
#' @param which `"terms"` or `"trace"`.
#' @param select indices of the `gp()` terms to draw (default all).
#' @param n grid size per input.
#' @param rug add a rug (1-D) or the data points (2-D) when the model frame
#'   is stored.
#' @param pages number of pages over which to spread the panels (mgcv's
#'   convention); 0 (default) leaves the layout to the user.
#' @param ... passed to the plotting functions.
#' @return `x`, invisibly.
#' @examples
#' set.seed(5)
#' d <- data.frame(x1 = runif(300), x2 = runif(300))
#' d$y <- sin(4 * d$x1) * cos(3 * d$x2) + rnorm(300, sd = 0.1)
#' fit <- gpgam(y ~ gp(x1, x2), data = d, control = gp_control(inducing = 30, iterations = 300))
#' plot(fit)
#' plot(fit, which = "trace")
#' @export
plot.gpgam <- function(x, which = c("terms", "trace"), select = NULL, n = 100, rug = TRUE, pages = 0, ...) {
  which <- match.arg(which)
  if (which == "trace") return(plot_trace(x, ...))
  gps <- x$terms$gp
  if (length(gps) == 0) {
    message("the model has no gp() terms; plotting the trace")
    return(plot_trace(x, ...))
  }
  select <- select %||% seq_along(gps)
  if (!is.numeric(select) || any(!select %in% seq_along(gps)))
    stop_arg("select", "must index the gp() terms (1..", length(gps), ")")
  check_count(n, "n")
  check_count(pages, "pages", zero = TRUE)
  if (pages > 0) {
    panels <- sum(vapply(gps[select], function(g) if (length(g$spec$vars) > 2) length(g$spec$vars) else 1L, 1L))
    per <- ceiling(panels / pages)
    nc <- ceiling(sqrt(per))
    op <- graphics::par(mfrow = c(ceiling(per / nc), nc))
    on.exit(graphics::par(op))
  }
  for (i in select) {
    g <- gps[[i]]
    d <- length(g$spec$vars)
    if (g$type == "factor") {
      plot_term_factor(x, i, g, ...)
      next
    }
    data <- if (rug && !is.null(x$model)) gp_inputs(x$model, g$spec) else NULL
    if (d == 1) plot_term_1d(x, i, g, n, data, ...)
    else if (d == 2) plot_term_2d(x, i, g, min(n, 60), data, ...)
    else for (j in seq_len(d)) plot_term_1d(x, i, g, n, data, slice = j, ...)
  }
  invisible(x)
}

# Posterior mean and se of gp() term i at raw inputs Xraw (one row per point).
term_grid_predict <- function(fit, i, Xraw) {
  g <- fit$terms$gp[[i]]
  p <- sum(vapply(fit$state$specs, function(s) length(s$cols) + !is.null(s$by_col), 1L))
  X <- matrix(0, nrow(Xraw), p)
  X[, fit$state$specs[[i]]$cols + 1L] <- if (g$type == "factor") Xraw else standardise(Xraw, g$scaling)
  # a 'by' term: its curve f(x) (by = 1 on the data scale; a level's indicator 1)
  if (!is.null(g$by)) X[, fit$state$specs[[i]]$by_col + 1L] <- if (g$by$type == "numeric") 1 / g$by$scale else 1
  lp <- latent_predict(fit, X, rep(0, nrow(X)), terms = TRUE)
  list(fit = lp$term_fit[, i], se = lp$term_se[, i])
}

plot_term_1d <- function(fit, i, g, n, data, slice = 1L, ...) {
  d <- length(g$spec$vars)
  grid <- seq(g$range[1, slice], g$range[2, slice], length.out = n)
  Xraw <- matrix(g$scaling$center, n, d, byrow = TRUE)
  Xraw[, slice] <- grid
  p <- term_grid_predict(fit, i, Xraw)
  lo <- p$fit - 2 * p$se
  hi <- p$fit + 2 * p$se
  ylab <- if (d == 1) g$spec$label else paste0(g$spec$label, " (others at their means)")
  plot(grid, p$fit, type = "n", ylim = range(lo, hi), xlab = g$spec$vars[slice], ylab = ylab, ...)
  graphics::polygon(c(grid, rev(grid)), c(lo, rev(hi)), col = grDevices::adjustcolor("steelblue", 0.25),
                    border = NA)
  graphics::lines(grid, p$fit, lwd = 2)
  if (!is.null(data)) graphics::rug(data[, slice], col = grDevices::adjustcolor("black", 0.3))
}

plot_term_factor <- function(fit, i, g, ...) {
  L <- length(g$levels)
  p <- term_grid_predict(fit, i, matrix(seq_len(L) - 1, ncol = 1))
  lo <- p$fit - 2 * p$se
  hi <- p$fit + 2 * p$se
  plot(seq_len(L), p$fit, ylim = range(lo, hi), xaxt = "n", pch = 19, xlab = g$spec$vars, ylab = g$spec$label, ...)
  graphics::axis(1, at = seq_len(L), labels = g$levels)
  graphics::segments(seq_len(L), lo, seq_len(L), hi, col = "steelblue", lwd = 2)
  graphics::abline(h = 0, lty = 3)
}

plot_term_2d <- function(fit, i, g, n, data, ...) {
  x1 <- seq(g$range[1, 1], g$range[2, 1], length.out = n)
  x2 <- seq(g$range[1, 2], g$range[2, 2], length.out = n)
  Xraw <- as.matrix(expand.grid(x1, x2))
  p <- term_grid_predict(fit, i, Xraw)
  mu <- matrix(p$fit, n, n)
  se <- matrix(p$se, n, n)
  graphics::image(x1, x2, mu, col = grDevices::hcl.colors(50, "Blue-Red 3"), xlab = g$spec$vars[1],
                  ylab = g$spec$vars[2], main = g$spec$label, ...)
  graphics::contour(x1, x2, mu, add = TRUE)
  graphics::contour(x1, x2, se, add = TRUE, lty = 2, col = "grey40", labcex = 0.6)
  if (!is.null(data)) {
    keep <- if (nrow(data) > 2000) seq(1, nrow(data), length.out = 2000) else seq_len(nrow(data))
    graphics::points(data[keep, 1], data[keep, 2], pch = ".", col = grDevices::adjustcolor("black", 0.4))
  }
}

#' @describeIn plot.gpgam the objective per iteration, for any scalegp fit.
#' @export
plot.scalegp <- function(x, ...) plot_trace(x, ...)

plot_trace <- function(x, ...) {
  plot(seq_along(x$trace), x$trace, type = "l", xlab = "iteration", ylab = x$engine$objective, ...)
  invisible(x)
}
