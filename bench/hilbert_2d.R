# bench/hilbert_2d.R: gp(x, z, basis = "hilbert") on two-input surfaces,
# beside gam REML s(x, z) and the default inducing basis (defaults on every
# side, one thread, one run each); prints a markdown table:
#   - gamSim(2) (mgcv's bivariate test function) at 400, 2000 and 10000 rows,
#     noise sd 0.1 and 0.5;
#   - sin(2 pi a x) cos(2 pi a z) on the unit square (a = 1, 1.5: lengthscales
#     of about 0.6-0.9 and 0.45-0.7 of the half-range), noise sd 0.3, at 1000
#     and 10000 rows.
# Scores at the data rows: RMSE of f and the coverage of f by the 95% bands;
# the Hilbert rows give the final sines per input, the box (half-ranges)
# and the refits.
#   Rscript bench/hilbert_2d.R > bench/results/hilbert_2d.md
suppressMessages({library(scalegp); library(mgcv)})
rows <- list()
one <- function(data, f, label) {
  for (b in c("hilbert", "inducing")) {
    fo <- as.formula(sprintf('y ~ gp(x, z, basis = "%s")', b))
    t <- system.time(fit <- suppressWarnings(gpgam(fo, data = data, control = gp_control(threads = 1, verbose = FALSE))))
    p <- predict(fit, data, se.fit = TRUE)
    mu <- as.numeric(p$fit); se <- as.numeric(p$se.fit)
    info <- if (b == "hilbert") {
      h <- fit$terms$gp[[1]]$hilbert
      sprintf(" (%s sines, box %s, %d refits)", paste(h$m, collapse = " x "),
              paste(sprintf("%.2f", h$c), collapse = "/"), if (is.null(fit$hilbert_refits)) 0L else fit$hilbert_refits)
    } else ""
    rows[[length(rows) + 1]] <<- data.frame(data = label, method = paste0("gpgam ", b, info), seconds = t[["elapsed"]],
                                           rmse = sqrt(mean((mu - f)^2)), cover = mean(abs(mu - f) <= 1.96 * se))
  }
  t <- system.time(g <- gam(y ~ s(x, z, k = 60), data = data, method = "REML"))
  pg <- predict(g, data, se.fit = TRUE)
  rows[[length(rows) + 1]] <<- data.frame(data = label, method = "gam REML s(x, z, k = 60)", seconds = t[["elapsed"]],
                                         rmse = sqrt(mean((as.numeric(pg$fit) - f)^2)),
                                         cover = mean(abs(as.numeric(pg$fit) - f) <= 1.96 * as.numeric(pg$se.fit)))
}
invisible(gpgam(y ~ gp(x, z, basis = "hilbert"), data = data.frame(x = runif(50), z = runif(50), y = rnorm(50))))
for (n in c(400, 2000, 10000)) for (sc in c(0.1, 0.5)) {
  set.seed(n)
  d <- gamSim(2, n = n, scale = sc, verbose = FALSE)$data
  one(d, d$f, sprintf("gamSim(2), %d rows, sd %.1f", n, sc))
}
for (n in c(1000, 10000)) for (a in c(1, 1.5)) {
  set.seed(n)
  d <- data.frame(x = runif(n), z = runif(n))
  f <- sin(2 * pi * a * d$x) * cos(2 * pi * a * d$z)
  d$y <- f + rnorm(n, sd = 0.3)
  one(d, f, sprintf("sin(2 pi %.1f x) cos(2 pi %.1f z), %d rows", a, a, n))
}
tab <- do.call(rbind, rows)
cat("# gp(x, z, basis = \"hilbert\") on two-input surfaces\n\n")
cat(sprintf("Measured %s on the shared 2-core machine (%s), one run each, threads = 1 (`Rscript bench/hilbert_2d.R`); mgcv %s.\n\n",
            format(Sys.Date()), R.version$platform, packageVersion("mgcv")))
cat("| data | method | seconds | RMSE of f | coverage of f |\n|---|---|---|---|---|\n")
for (i in seq_len(nrow(tab)))
  cat(sprintf("| %s | %s | %.3f | %.4f | %.3f |\n", tab$data[i], tab$method[i], tab$seconds[i], tab$rmse[i], tab$cover[i]))
