# plot() of a fit: term panels with bands (through latent_predict()), the
# parametric terms, and the objective's trace.

#' Plot a gpgam fit
#'
#' In the manner of `mgcv::plot.gam()`, `which = "terms"` draws one panel per
#' `gp()` term (centred over the data, see [gp()]): a term over one input as
#' its posterior mean with a band of `se` standard errors; a term over two
#' inputs as a map (`scheme`), blank where no data are near (`too.far`); a
#' term over more inputs as one slice per input, the others held at their
#' means; a factor random effect as its level
#' effects with error bars; a term with a numeric `by` as its coefficient
#' function.  With `all.terms = TRUE` the parametric terms follow (a numeric
#' variable as a line with its band, centred at the variable's mean as
#' [termplot()] draws it, a factor as its level effects); terms of several
#' columns, such as `poly(z, 2)`, and interactions are not drawn (a message
#' names them).
#' `which = "trace"` plots the objective the fit maximised per iteration.
#'
#' @param x a `gpgam` fit.
#' @param which `"terms"` or `"trace"`.
#' @param residuals add partial residuals (the term at the data plus the
#'   working residuals) to the panels of terms over one input (of a factor
#'   `by` curve, at its level's rows, as is its rug), drawn over the band;
#'   `pch` and `cex`
#'   in `...` set their symbol and size (default 20 and 0.5).
#' @param rug add a rug (1-D) or the data points (2-D) when the model frame
#'   is stored.
#' @param se `TRUE` (2 standard errors), `FALSE` (no band) or a number of
#'   standard errors.
#' @param shade draw the band as a shaded region (`TRUE`) or as dashed lines.
#' @param shade.col the colour of a shaded band.
#' @param scale `-1` (default): the panels of terms over one input share one
#'   y-axis range, as in mgcv, and the maps of terms over two inputs one
#'   colour scale (symmetric about zero, with a key); `0`: each panel has its own.
#' @param select indices of the panels to draw (of the `gp()` terms, then,
#'   with `all.terms`, of the parametric terms).
#' @param all.terms also plot the parametric terms.
#' @param pages number of pages over which to spread the panels (mgcv's
#'   convention); 0 (default) leaves the layout to the user.
#' @param scheme for terms over two inputs: `"contour"` (default: an image of
#'   the posterior mean with its contours and dashed contours of its standard
#'   error), `"image"` (the image alone) or `"persp"` (a perspective plot);
#'   mgcv's numbers 0, 1, 2 map to `"contour"`, `"persp"`, `"image"`.
#' @param n grid size per input.
#' @param n2 grid size per input of the maps of terms over two inputs
#'   (mgcv's `n2`; `NULL`, the default: `min(n, 60)`).
#' @param ylim,xlab,ylab,main as in [plot.default()], for every panel (`NULL`:
#'   chosen per panel; a term's default label shows its edf, as mgcv's
#'   `s(x,3.38)`).
#' @param col the colour of the curves.
#' @param seWithMean add the posterior variance of the intercept to each
#'   term's band (mgcv's `seWithMean`), so that the band covers the curve
#'   with the overall level uncertain.
#' @param shift,trans each curve and band is drawn as `trans(f + shift)`,
#'   as in `mgcv::plot.gam()` (e.g. `shift = coef(fit)[1], trans = plogis`).
#' @param too.far for maps of terms over two inputs: grid points farther than
#'   this from every data point, with both inputs scaled to \[0, 1\], are
#'   not drawn (mgcv's `too.far`, default 0.1 as in `mgcv::plot.gam()`); 0
#'   draws the whole rectangle.  Needs the model frame.
#' @param ... passed to the plotting functions (for `scheme = "persp"`, [persp()]'s
#'   `theta`, `phi`, ... replace the default view, theta = phi = 30, as in mgcv).
#' @return Invisibly, for `which = "terms"`, a list with one element per
#'   panel drawn, as `mgcv::plot.gam()` returns: `label`, `xlab`, the grid `x`
#'   (and `y` for two inputs), `fit` and `se` on it, and where drawn the data
#'   (`raw`) and the partial residuals (`p.resid`); for `which = "trace"`, `x`.
#' @examples
#' set.seed(5)
#' d <- data.frame(x1 = runif(300), x2 = runif(300), z = rnorm(300))
#' d$y <- sin(4 * d$x1) + cos(3 * d$x2) + 0.5 * d$z + rnorm(300, sd = 0.1)
#' fit <- gpgam(y ~ gp(x1) + gp(x2) + z, data = d, control = gp_control(inducing = 15))
#' plot(fit, residuals = TRUE, pages = 1)
#' plot(fit, all.terms = TRUE, select = 3)
#' plot(fit, which = "trace")
#' @export
plot.gpgam <- function(x, which = c("terms", "trace"), residuals = FALSE, rug = TRUE, se = TRUE, shade = TRUE,
                       shade.col = grDevices::adjustcolor("steelblue", 0.25), scale = -1, select = NULL,
                       all.terms = FALSE, pages = 0, scheme = c("contour", "image", "persp"), n = 100,
                       n2 = NULL, ylim = NULL, xlab = NULL, ylab = NULL, main = NULL, col = "black", seWithMean = FALSE,
                       shift = 0, trans = I, too.far = 0.1, ...) {
  which <- match_arg(which)
  if (which == "trace") return(plot_trace(x, ...))
  if (!is.null(ylim) && (!is.numeric(ylim) || length(ylim) != 2 || any(!is.finite(ylim))))
    stop_arg("ylim", "must be two finite numbers")
  if (!is.numeric(shift) || length(shift) != 1 || !is.finite(shift)) stop_arg("shift", "must be a finite number")
  if (!is.function(trans)) stop_arg("trans", "must be a function, such as plogis or exp")
  if (is.numeric(scheme)) scheme <- c("contour", "persp", "image")[min(scheme, 2) + 1]
  scheme <- match_arg(scheme)
  mult <- if (isTRUE(se)) 2 else if (isFALSE(se)) 0 else if (is.numeric(se) && length(se) == 1 && se >= 0) se else
    stop_arg("se", "must be TRUE, FALSE or a number of standard errors")
  check_count(n, "n")
  if (!is.null(n2)) check_count(n2, "n2")
  check_count(pages, "pages", zero = TRUE)
  if (!is.numeric(too.far) || length(too.far) != 1 || !isTRUE(too.far >= 0))
    stop_arg("too.far", "must be a single non-negative number (0: no masking)")
  if (!scale %in% c(-1, 0)) stop_arg("scale", "must be -1 (a shared y-axis) or 0 (one per panel)")
  panels <- term_panels(x, n, all.terms, n2)
  if (length(panels) == 0) {
    message("the model has no terms to plot; plotting the trace")
    return(plot_trace(x, ...))
  }
  select <- select %||% seq_along(panels)
  if (!is.numeric(select) || any(!select %in% seq_along(panels)))
    stop_arg("select", "must index the panels (1..", length(panels), ")")
  panels <- panels[select]
  edf <- vapply(x$params$gp, `[[`, 1, "edf")
  v0 <- if (isTRUE(seWithMean)) intercept_variance(x) else 0
  for (i in seq_along(panels)) {
    p <- panels[[i]]
    if (is.null(p$term)) next
    # (the label as drawn, with the edf as mgcv's s(x,3.38); p$label stays the term's)
    lab <- sub("\\)(:[^()]*)?$", paste0(",", format(round(edf[p$term], 2), nsmall = 2), ")\\1"), p$label)
    if (p$kind == "2d") p$title <- lab
    else p$ylab <- if (!is.null(p$ylab)) sub(p$label, lab, p$ylab, fixed = TRUE) else lab
    p$se <- sqrt(p$se^2 + v0)
    panels[[i]] <- p
  }
  data_rows <- if (!is.null(x$model)) x$model else NULL
  # partial residuals: each term at the data plus the working residuals
  # (at the fitting rows: predict() pads the rows na.exclude dropped)
  presid <- if (isTRUE(residuals) && !is.null(data_rows))
    terms_at_frame(x, data_rows) + residuals_at(x, "working")
  for (i in seq_along(panels)) {
    panels[[i]] <- add_data(x, panels[[i]], data_rows, presid, rug)
    if (panels[[i]]$kind == "2d" && too.far > 0 && !is.null(data_rows)) {  # (as mgcv's exclude.too.far())
      far <- too_far_mask(panels[[i]]$x, panels[[i]]$y, gp_inputs(data_rows, x$terms$gp[[panels[[i]]$term]]$spec), too.far)
      panels[[i]]$fit[far] <- NA
      panels[[i]]$se[far] <- NA
    }
  }
  if (pages > 0) {
    per <- ceiling(length(panels) / pages)
    nc <- ceiling(sqrt(per))
    op <- graphics::par(mfrow = c(ceiling(per / nc), nc))
    on.exit(graphics::par(op))
  }
  one_d <- vapply(panels, function(p) p$kind == "1d", TRUE)
  tr <- function(v) trans(v + shift)
  user_ylim <- ylim
  if (is.null(ylim) && scale == -1 && any(one_d))
    ylim <- range(unlist(lapply(panels[one_d], function(p) tr(c(p$fit - mult * p$se, p$fit + mult * p$se, p$p.resid)))),
                  na.rm = TRUE)
  labs <- list(xlab = xlab, ylab = ylab, main = main, ylim = user_ylim)
  # maps of terms over two inputs: colours on one scale, symmetric about the
  # transformed zero and shared by all maps (and the curves) with scale = -1,
  # so that a near-null term looks pale
  two_d <- vapply(panels, function(p) p$kind == "2d", TRUE)
  if (any(two_d)) {
    z0 <- tr(0)
    a <- vapply(panels[two_d], function(p) max(abs(tr(p$fit) - z0), na.rm = TRUE), 0)
    if (scale == -1) a[] <- max(a, if (!is.null(ylim)) abs(ylim - z0))
    for (k in seq_along(a)) panels[two_d][[k]]$zlim <- z0 + c(-1, 1) * max(a[k], 1e-12)
  }
  for (p in panels) draw_panel(p, mult, shade, shade.col, ylim, scheme, labs, col, tr, ...)
  invisible(panels)
}

#' @describeIn plot.gpgam the objective per iteration, for any scalegp fit.
#' @export
plot.scalegp <- function(x, ...) plot_trace(x, ...)

plot_trace <- function(x, ...) {
  # (a fit without iterations, e.g. a decoupled fit in closed form: one point)
  plot(seq_along(x$trace) - (length(x$trace) > x$iterations), x$trace, type = if (length(x$trace) > 1) "l" else "p",
       xlab = "iteration",
       ylab = paste(x$engine$objective, if (isTRUE(x$log_prior != 0)) "+ log prior"), ...)
  invisible(x)
}

# Posterior mean and se of gp() term i (centred) at raw inputs Xraw (one row per point).
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

# The panels of a fit: grids and predictions, without data.
term_panels <- function(fit, n, all.terms, n2 = NULL) {
  out <- list()
  for (i in seq_along(fit$terms$gp)) {
    g <- fit$terms$gp[[i]]
    d <- length(g$spec$vars)
    ylab <- if (!is.null(g$by) && g$by$type == "numeric") paste0(g$spec$label, " (coefficient of ", g$by$var, ")")
            else g$spec$label
    if (g$type == "factor") {
      p <- term_grid_predict(fit, i, matrix(seq_along(g$levels) - 1))
      out[[length(out) + 1]] <- list(kind = "factor", term = i, label = g$spec$label, xlab = g$spec$vars,
                                     x = g$levels, fit = p$fit, se = p$se)
    } else if (d == 2) {
      m <- n2 %||% min(n, 60)
      x1 <- seq(g$range[1, 1], g$range[2, 1], length.out = m)
      x2 <- seq(g$range[1, 2], g$range[2, 2], length.out = m)
      p <- term_grid_predict(fit, i, as.matrix(expand.grid(x1, x2)))
      out[[length(out) + 1]] <- list(kind = "2d", term = i, label = g$spec$label, xlab = g$spec$vars[1],
                                     ylab = g$spec$vars[2], x = x1, y = x2, fit = matrix(p$fit, m, m),
                                     se = matrix(p$se, m, m))
    } else {
      for (j in seq_len(d)) {
        grid <- seq(g$range[1, j], g$range[2, j], length.out = n)
        Xraw <- matrix(g$scaling$center, n, d, byrow = TRUE)
        Xraw[, j] <- grid
        p <- term_grid_predict(fit, i, Xraw)
        out[[length(out) + 1]] <- list(kind = "1d", term = i, slice = j, label = g$spec$label,
                                       xlab = g$spec$vars[j],
                                       ylab = ylab, main = if (d > 1) "others at their means",
                                       x = grid, fit = p$fit, se = p$se)
      }
    }
  }
  if (all.terms && !is.null(fit$terms$param) && !is.null(fit$model)) out <- c(out, parametric_panels(fit, n))
  out
}

# Panels of the parametric terms: a numeric variable as x * beta with its
# se, a factor as its level effects.
parametric_panels <- function(fit, n) {
  pp <- param_posterior(fit)
  labs <- attr(fit$terms$param, "term.labels")
  asg <- fit$terms$param_assign
  out <- list()
  skipped <- character()
  for (j in seq_along(labs)) {
    cols <- which(asg == j)
    v <- fit$model[[labs[j]]]
    if (is.null(v) || (is.numeric(v) && length(cols) != 1) || !(is.numeric(v) || is.factor(v))) {
      skipped <- c(skipped, labs[j])  # an interaction, or a term of several columns such as poly()
      next
    }
    if (is.numeric(v)) {
      grid <- seq(min(v), max(v), length.out = n)
      b <- pp$coef[cols]
      xc <- grid - mean(v)  # (centred at the variable's mean, as termplot())
      out[[length(out) + 1]] <- list(kind = "1d", label = labs[j], xlab = labs[j], ylab = labs[j], x = grid,
                                     fit = xc * b, se = abs(xc) * sqrt(pp$vcov[cols, cols]), param = labs[j])
    } else if (is.factor(v)) {
      lev <- levels(v)
      nm <- names(pp$coef)[cols]
      eff <- c(0, pp$coef[cols])[seq_along(lev)]
      ses <- c(0, sqrt(diag(pp$vcov)[cols]))[seq_along(lev)]
      if (length(nm) == length(lev)) {  # no intercept: every level has a coefficient
        eff <- pp$coef[cols]
        ses <- sqrt(diag(pp$vcov)[cols])
      }
      out[[length(out) + 1]] <- list(kind = "factor", label = labs[j], xlab = labs[j], x = lev, fit = unname(eff),
                                     se = unname(ses), param = labs[j])
    }
  }
  if (length(skipped))
    message("all.terms: parametric terms are drawn when they are one numeric column or a factor; not drawn: ",
            paste0("'", skipped, "'", collapse = ", "), " (see predict(fit, type = \"terms\"))")
  out
}

# Grid points of a map (x by y) farther than `dist` from every data point
# (rows of X), both axes scaled to [0, 1] over the grid's range, as mgcv's
# exclude.too.far(): TRUE where masked.  The distances are exact when the
# data have at most 4 m1 m2 distinct points; otherwise the points are first
# rounded to a grid four times finer than the map's (moving them by at
# most an eighth of a cell's diagonal), so that the cost does not grow with
# the rows.
too_far_mask <- function(x, y, X, dist) {
  m1 <- length(x)
  m2 <- length(y)
  sc <- function(v, g) if (diff(range(g)) > 0) (v - min(g)) / diff(range(g)) else v * 0
  cells <- unique(cbind(sc(X[, 1], x), sc(X[, 2], y)))
  cells <- cells[stats::complete.cases(cells), , drop = FALSE]
  if (nrow(cells) > 4 * m1 * m2) {
    f1 <- 4 * (m1 - 1)
    f2 <- 4 * (m2 - 1)
    cells <- unique(cbind(round(cells[, 1] * f1) / max(f1, 1), round(cells[, 2] * f2) / max(f2, 1)))
  }
  gx <- sc(x, x)
  gy <- sc(y, y)
  far <- matrix(TRUE, m1, m2)
  for (j in seq_len(m2)) {  # one column of the grid at a time: m1 x cells distances
    d2 <- outer(gx, cells[, 1], "-")^2 + outer(rep(gy[j], m1), cells[, 2], "-")^2
    far[, j] <- apply(d2, 1, min) > dist^2
  }
  far
}

# The data of a panel: the raw inputs (rug) and partial residuals.
add_data <- function(fit, p, mf, presid, rug) {
  if (is.null(mf) || p$kind == "factor") return(p)
  if (!is.null(p$param)) {
    if (rug) p$raw <- mf[[p$param]]
    return(p)
  }
  g <- fit$terms$gp[[p$term]]
  X <- gp_inputs(mf, g$spec)
  if (p$kind == "2d") {
    if (rug) p$raw <- X
    return(p)
  }
  # (a factor 'by' curve: the rug and partial residuals of its level's rows only, where the curve is in the
  # predictor; a numeric 'by' term is f(x) z: its panel shows f, which has no partial residuals)
  rows <- if (!is.null(g$by) && g$by$type == "level") which(mf[[g$by$var]] == g$by$level) else TRUE
  if (rug) p$raw <- X[rows, p$slice]
  if (!is.null(presid) && length(g$spec$vars) == 1 && !(!is.null(g$by) && g$by$type == "numeric")) {
    p$x.resid <- X[rows, 1]
    p$p.resid <- unname(presid[rows, g$spec$label])
  }
  p
}

# One panel; `labs`: the user's xlab, ylab, main and ylim (NULL: the panel's);
# `tr`: the shift and transformation of the curve and band.
draw_panel <- function(p, mult, shade, shade.col, ylim, scheme, labs, col, tr, ...) {
  xlab <- labs$xlab %||% p$xlab
  main <- labs$main %||% p$main %||% ""
  if (p$kind == "factor") {
    lo <- tr(p$fit - mult * p$se)
    hi <- tr(p$fit + mult * p$se)
    L <- length(p$x)
    # (half a level's room at each side, unless the user's xlim says otherwise)
    do.call(plot, utils::modifyList(list(seq_len(L), tr(p$fit), xlim = c(0.5, L + 0.5), ylim = labs$ylim %||% range(lo, hi),
                                         xaxt = "n", pch = 19, col = col, xlab = xlab,
                                         ylab = labs$ylab %||% p$ylab %||% p$label, main = main), list(...)))
    graphics::axis(1, at = seq_len(L), labels = p$x)
    if (mult > 0) graphics::segments(seq_len(L), lo, seq_len(L), hi, col = "steelblue", lwd = 2)
    graphics::abline(h = tr(0), lty = 3)
    return(invisible())
  }
  if (p$kind == "2d") {
    if (scheme == "persp") {
      # (mgcv's view, theta = phi = 30, unless `...` gives theta, phi, ... of persp())
      look <- utils::modifyList(list(theta = 30, phi = 30, col = "lightblue", shade = 0.4, border = NA), list(...))
      do.call(graphics::persp, c(list(p$x, p$y, tr(p$fit), xlab = xlab, ylab = labs$ylab %||% p$ylab,
                                      zlab = p$title %||% p$label, main = main), look))
      return(invisible())
    }
    zlim <- p$zlim %||% range(tr(p$fit))
    graphics::image(p$x, p$y, tr(p$fit), col = grDevices::hcl.colors(50, "Blue-Red 3"), zlim = zlim, xlab = xlab,
                    ylab = labs$ylab %||% p$ylab, main = labs$main %||% p$title %||% p$label, ...)
    # the colour key
    keys <- seq(zlim[1], zlim[2], length.out = 5)
    graphics::legend("topright", legend = format(signif(keys, 2)), fill = grDevices::hcl.colors(5, "Blue-Red 3"),
                     bg = grDevices::adjustcolor("white", 0.8), cex = 0.6, title = "term", inset = 0.01)
    if (scheme == "contour") {
      graphics::contour(p$x, p$y, tr(p$fit), add = TRUE)
      if (mult > 0) graphics::contour(p$x, p$y, p$se, add = TRUE, lty = 2, col = "grey40", labcex = 0.6)
    }
    if (!is.null(p$raw)) {
      keep <- if (nrow(p$raw) > 2000) seq(1, nrow(p$raw), length.out = 2000) else seq_len(nrow(p$raw))
      graphics::points(p$raw[keep, 1], p$raw[keep, 2], pch = ".", col = grDevices::adjustcolor("black", 0.4))
    }
    return(invisible())
  }
  lo <- tr(p$fit - mult * p$se)
  hi <- tr(p$fit + mult * p$se)
  pr <- if (!is.null(p$p.resid)) tr(p$p.resid)
  yl <- ylim %||% range(lo, hi, pr, na.rm = TRUE)
  plot(p$x, tr(p$fit), type = "n", ylim = yl, xlab = xlab, ylab = labs$ylab %||% p$ylab, main = main, ...)
  if (mult > 0) {
    if (shade) graphics::polygon(c(p$x, rev(p$x)), c(lo, rev(hi)), col = shade.col, border = NA)
    else graphics::matlines(p$x, cbind(lo, hi), lty = 2, col = col)
  }
  # (over the band, as mgcv draws them; the user's pch and cex apply to them)
  if (!is.null(pr)) {
    dots <- list(...)
    graphics::points(p$x.resid, pr, pch = dots[["pch"]] %||% 20, cex = dots[["cex"]] %||% 0.5,
                     col = grDevices::adjustcolor("black", 0.35))
  }
  graphics::lines(p$x, tr(p$fit), lwd = 2, col = col)
  if (!is.null(p$raw)) graphics::rug(p$raw, col = grDevices::adjustcolor("black", 0.3))
  invisible()
}
