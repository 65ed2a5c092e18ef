# What the coupled posterior of Adam, Durrande and John (2018) buys over the
# mean-field one: two strongly correlated inputs,
#   z ~ U(0, 1), x1 = z + 0.15 e1, x2 = z + 0.15 e2   (correlation about 0.98)
#   y = sin(2 x1) + 0.5 x2^2 + N(0, 0.5^2),  2000 rows,
# fitted by y ~ gp(x1, kernel = "se") + gp(x2, kernel = "se") (the paper's kernel)
# with posterior = "coupled" (the default) and
# "meanfield", and by mgcv::gam(y ~ s(x1) + s(x2), method = "REML"), package
# defaults otherwise.  Per draw: coverage of the 95% term bands of the
# centred truth at the data rows, mean band width, and the ELBO of each
# posterior.  The first draw's bands on a grid are kept for the figure.
#
#   Rscript inst/replication/seed004_correlated.R [draws]      (default 10)
#
# Writes inst/replication/results/seed004_correlated.rds, read by the
# vignette "Additive GPs with a coupled posterior".
suppressMessages({ library(scalegp); library(mgcv) })
args <- commandArgs(TRUE)
draws <- if (length(args)) as.integer(args[1]) else 10L
out <- file.path("inst", "replication", "results", "seed004_correlated.rds")
truth <- list(x1 = function(x) sin(2 * x), x2 = function(x) 0.5 * x^2)

simulate <- function(n = 2000) {
  z <- runif(n)
  d <- data.frame(x1 = z + 0.15 * rnorm(n), x2 = z + 0.15 * rnorm(n))
  d$y <- truth$x1(d$x1) + truth$x2(d$x2) + rnorm(n, sd = 0.5)
  d
}

# centred truth and a fit's term bands at the rows of `at` (terms centred over the data `d`)
bands <- function(fit, d, at, gam = FALSE) {
  p <- predict(fit, at, type = "terms", se.fit = TRUE)
  lab <- if (gam) c("s(x1)", "s(x2)") else c("gp(x1)", "gp(x2)")
  lapply(setNames(1:2, c("x1", "x2")), function(j) {
    v <- names(truth)[j]
    data.frame(fit = unname(p$fit[, lab[j]]), se = unname(p$se.fit[, lab[j]]),
               truth = truth[[v]](at[[v]]) - mean(truth[[v]](d[[v]])))
  })
}

summarise <- function(b) {
  vapply(b, function(t) c(cover = mean(abs(t$truth - t$fit) <= 1.96 * t$se), width = mean(2 * 1.96 * t$se)),
         c(cover = 0, width = 0))
}

rows <- NULL
curves <- NULL
for (r in seq_len(draws)) {
  set.seed(100 + r)
  d <- simulate()
  ctl <- function(...) gp_control(seed = r, verbose = FALSE, ...)
  t_c <- system.time(fc <- gpgam(y ~ gp(x1, kernel = "se") + gp(x2, kernel = "se"), data = d, control = ctl()))[["elapsed"]]
  t_m <- system.time(fm <- gpgam(y ~ gp(x1, kernel = "se") + gp(x2, kernel = "se"), data = d, control = ctl(posterior = "meanfield")))[["elapsed"]]
  t_g <- system.time(fg <- gam(y ~ s(x1) + s(x2), data = d, method = "REML"))[["elapsed"]]
  fits <- list(coupled = fc, `mean field` = fm, `mgcv gam REML` = fg)
  secs <- c(t_c, t_m, t_g)
  for (k in seq_along(fits)) {
    s <- summarise(bands(fits[[k]], d, d, gam = k == 3))
    rows <- rbind(rows, data.frame(draw = r, method = names(fits)[k], seconds = secs[k],
                                   cover_x1 = s["cover", "x1"], cover_x2 = s["cover", "x2"],
                                   width_x1 = s["width", "x1"], width_x2 = s["width", "x2"],
                                   elbo = if (k < 3) fits[[k]]$elbo else NA_real_,
                                   converged = if (k < 3) isTRUE(fits[[k]]$converged) else fg$converged))
  }
  if (r == 1) {
    grid <- data.frame(x1 = seq(quantile(d$x1, 0.01), quantile(d$x1, 0.99), length.out = 101),
                       x2 = seq(quantile(d$x2, 0.01), quantile(d$x2, 0.99), length.out = 101))
    for (k in seq_along(fits)) {
      b <- bands(fits[[k]], d, grid, gam = k == 3)
      for (v in names(b))
        curves <- rbind(curves, data.frame(method = names(fits)[k], input = v, x = grid[[v]], b[[v]]))
    }
  }
  cat(sprintf("draw %2d: coverage coupled %.3f / %.3f, mean field %.3f / %.3f, mgcv %.3f / %.3f\n", r,
              rows$cover_x1[nrow(rows) - 2], rows$cover_x2[nrow(rows) - 2], rows$cover_x1[nrow(rows) - 1],
              rows$cover_x2[nrow(rows) - 1], rows$cover_x1[nrow(rows)], rows$cover_x2[nrow(rows)]))
}
res <- list(draws = draws, rows = rows, curves = curves, date = format(Sys.Date()),
            mgcv = as.character(utils::packageVersion("mgcv")), version = as.character(utils::packageVersion("scalegp")),
            commit = tryCatch(system("git rev-parse --short HEAD", intern = TRUE), error = function(e) NA_character_),
            command = sprintf("Rscript inst/replication/seed004_correlated.R %d", draws))
saveRDS(res, out)
print(aggregate(cbind(seconds, cover_x1, cover_x2, width_x1, width_x2) ~ method, data = rows, FUN = mean), digits = 3)
