# Coverage of the 95% component bands on the Friedman-type function of
# Adam, Durrande and John (2018, section 7; inst/replication/seed004_friedman.R):
# 5000 rows, six main effects and the x1-x2 interaction, against the analytic
# ANOVA components (centred over the rows, as both packages centre terms);
# gpgam() in several settings (the paper's squared exponential kernels with
# its inducing points; the package defaults, whose kernel is Matern 5/2; the
# defaults with the squared exponential and Matern 3/2 kernels) against
# mgcv::gam(y ~ s(x1) + ... + s(x6) + ti(x1, x2), method = "REML").
#   Rscript bench/seed004_coverage.R [draws]       (default 10)
# Writes bench/results/seed004_coverage.md.
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
draws <- if (length(args)) as.integer(args[1]) else 10L
cin_term <- 5.24663
f1 <- function(x) ifelse(x == 0, 0, 10 * (1 - cos(pi * x)) / (pi * x)) - cin_term
analytic <- list(x1 = f1, x2 = f1, x3 = function(x) 20 * (x - 0.5)^2 - 5 / 3, x4 = function(x) 10 * x - 5,
                 x5 = function(x) 5 * x - 2.5, x6 = function(x) 0 * x)
f12 <- function(x1, x2) 10 * sin(pi * x1 * x2) - f1(x1) - f1(x2) - cin_term
simulate <- function(n) {
  d <- as.data.frame(matrix(runif(6 * n), n, dimnames = list(NULL, paste0("x", 1:6))))
  d$y <- 10 * sin(pi * d$x1 * d$x2) + 20 * (d$x3 - 0.5)^2 + 10 * d$x4 + 5 * d$x5 + rnorm(n)
  d
}
grid <- seq(0.01, 0.99, length.out = 99)
g2 <- expand.grid(x1 = seq(0.05, 0.95, length.out = 19), x2 = seq(0.05, 0.95, length.out = 19))
nd <- data.frame(x1 = grid, x2 = grid, x3 = grid, x4 = grid, x5 = grid, x6 = grid)
nd2 <- data.frame(g2, x3 = 0.5, x4 = 0.5, x5 = 0.5, x6 = 0.5)
# Both packages centre a term over the rows of the data, so the truth is
# centred the same way (its mean over the rows, not over U[0, 1], which
# differs by about 0.04 for x4: several posterior sds of a linear term).
cover <- function(p, p2, names_main, name_inter, d) {
  c(stats::setNames(vapply(seq_along(analytic), function(j) {
    truth <- analytic[[j]](grid) - mean(analytic[[j]](d[[j]]))
    mean(abs(p$fit[, names_main[j]] - truth) <= 1.96 * p$se.fit[, names_main[j]])
  }, 0), names(analytic)),
  x1x2 = mean(abs(p2$fit[, name_inter] - (f12(g2$x1, g2$x2) - mean(f12(d$x1, d$x2)))) <= 1.96 * p2$se.fit[, name_inter]))
}
z <- function(k) seq(0, 1, length.out = k)
zz <- function(k) as.matrix(expand.grid(z(k), z(k)))
gp_form <- function(k1, k2, kernel = NULL) {
  kern <- if (is.null(kernel)) "" else sprintf(", kernel = '%s'", kernel)
  if (is.null(k1))
    return(as.formula(sprintf("y ~ %s + gp(x1, x2%s)", paste(sprintf("gp(x%d%s)", 1:6, kern), collapse = " + "), kern)))
  as.formula(sprintf("y ~ %s + gp(x1, x2, inducing = zz(%d)%s)",
                     paste(sprintf("gp(x%d, inducing = z(%d)%s)", 1:6, k1, kern), collapse = " + "), k2, kern))
}
settings <- list(
  "gpgam, 16 fixed regular inducing points (paper)" = list(form = gp_form(16, 4, "se"), fixed = "inducing"),
  "gpgam, 16 learned" = list(form = gp_form(16, 4, "se"), fixed = character(0), learn = TRUE),
  "gpgam, 32 fixed regular" = list(form = gp_form(32, 6, "se"), fixed = "inducing"),
  "gpgam, defaults with kernel = \"se\"" = list(form = gp_form(NULL, NULL, "se"), fixed = character(0)),
  "gpgam, package defaults (kernel = \"matern52\")" = list(form = gp_form(NULL, NULL), fixed = character(0)),
  "gpgam, defaults with kernel = \"matern32\"" = list(form = gp_form(NULL, NULL, "matern32"), fixed = character(0)))
mains <- sprintf("gp(x%d)", 1:6)
rows <- NULL
for (r in seq_len(draws)) {
  set.seed(3000 + r)
  d <- simulate(5000)
  for (s in names(settings)) {
    st <- settings[[s]]
    ctl <- gp_control(fixed = st$fixed, seed = r, verbose = FALSE, learn_inducing = st$learn)
    t <- system.time(fit <- gpgam(st$form, data = d, control = ctl))[["elapsed"]]
    p <- predict(fit, nd, type = "terms", se.fit = TRUE)
    p2 <- predict(fit, nd2, type = "terms", se.fit = TRUE)
    rows <- rbind(rows, data.frame(draw = r, method = s, seconds = t, converged = fit$converged,
                                   t(cover(p, p2, mains, "gp(x1, x2)", d)), check.names = FALSE))
  }
  t <- system.time(g <- gam(y ~ s(x1) + s(x2) + s(x3) + s(x4) + s(x5) + s(x6) + ti(x1, x2), data = d,
                            method = "REML"))[["elapsed"]]
  p <- predict(g, nd, type = "terms", se.fit = TRUE)
  p2 <- predict(g, nd2, type = "terms", se.fit = TRUE)
  rows <- rbind(rows, data.frame(draw = r, method = "mgcv gam REML", seconds = t, converged = TRUE,
                                 t(cover(p, p2, sprintf("s(x%d)", 1:6), "ti(x1,x2)", d)), check.names = FALSE))
  cat("draw", r, "done\n")
}
cols <- c(paste0("x", 1:6), "x1x2")
agg <- aggregate(rows[, c("seconds", cols)], by = list(method = rows$method), FUN = mean)
agg$main_min <- apply(agg[, paste0("x", 1:6)], 1, min)
agg$average <- rowMeans(agg[, cols])
agg$converged <- tapply(rows$converged, rows$method, mean)[agg$method]
agg <- agg[match(c(names(settings), "mgcv gam REML"), agg$method), ]
md <- c(sprintf("Mean over %d draws of 5000 rows (fresh data each draw).  Coverage: share of a grid (99 points per main effect, 19 x 19 for x1-x2) where the 95%% band covers the analytic ANOVA component.", draws), "",
        "| method | seconds | x1 | x2 | x3 | x4 | x5 | x6 | x1-x2 | worst main | average | converged |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %.1f | %s | %.3f | %.3f | %.2f |", agg$method, agg$seconds,
                apply(format(round(as.matrix(agg[, cols]), 3), nsmall = 3), 1, paste, collapse = " | "),
                agg$main_min, agg$average, agg$converged),
        "", sprintf("Measured %s on %s, %d cores; mgcv %s.  Command: Rscript bench/seed004_coverage.R %d",
                    format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(),
                    packageVersion("mgcv"), draws))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(md, file.path("bench", "results", "seed004_coverage.md"))
writeLines(md)
