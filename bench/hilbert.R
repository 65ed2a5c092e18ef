# bench/hilbert.R: gp(basis = "hilbert") against the default inducing-point
# basis and mgcv, defaults on every side, one run, threads = 1.
#   Rscript bench/hilbert.R > bench/results/hilbert.md
#   Rscript bench/hilbert.R large > bench/results/hilbert_large.md   (1e6 Gaussian rows; binomial at 1e5 and 1e6)
# Designs: mcycle (5-fold CV RMSE of accel); gamSim(1) at 400 rows (RMSE of
# the fitted predictor against the true f on 2000 test rows, three seeds);
# the design of bench/gam_design.R (gp(x1) + gp(x2) + gp(x3, x4), gam's
# s(x1) + s(x2) + te(x3, x4)) at 1e4 and 1e5 Gaussian rows (test NLPD of y
# on 5000 rows, coverage of f by the 95% band); gamSim(1) binary at 2000 rows
# (test NLPD on 2000 rows).  Seconds are wall time of the whole call.
suppressMessages({library(scalegp); library(mgcv)})
`%||%` <- function(a, b) if (is.null(a)) b else a
source(file.path("bench", "gam_design.R"))
ctl <- gp_control(verbose = FALSE, threads = 1)
rmse <- function(a, b) sqrt(mean((a - b)^2))
H <- function(...) paste0("gp(", c(...), ', basis = "hilbert")', collapse = " + ")
I <- function(...) paste0("gp(", c(...), ")", collapse = " + ")
tm <- function(expr) { t0 <- proc.time()[[3]]; force(expr); proc.time()[[3]] - t0 }
large <- "large" %in% commandArgs(TRUE)
res <- list()
add <- function(...) res[[length(res) + 1]] <<- data.frame(..., check.names = FALSE)
cat("# gp(basis = \"hilbert\") against the inducing-point basis and mgcv\n\n")
cat(sprintf("Measured %s on the shared 2-core machine (%s), one run each, threads = 1 (`Rscript bench/hilbert.R%s`); mgcv %s.\n\n",
            Sys.Date(), R.version$platform, if (large) " large" else "", packageVersion("mgcv")))

if (!large) {
# mcycle, 5-fold CV
data(mcycle, package = "MASS")
set.seed(1)
fold <- sample(rep(1:5, length.out = nrow(mcycle)))
cv <- function(fitter) {
  tt <- 0; pr <- numeric(nrow(mcycle))
  for (k in 1:5) {
    tt <- tt + tm(fit <- fitter(mcycle[fold != k, ]))
    pr[fold == k] <- predict(fit, mcycle[fold == k, ])
  }
  c(tt, rmse(pr, mcycle$accel))
}
for (b in c("inducing", "hilbert")) {
  f <- as.formula(paste("accel ~", if (b == "hilbert") H("times") else I("times")))
  r <- cv(function(d) gpgam(f, data = d, control = ctl))
  add(data = "mcycle, 5-fold CV", method = paste("gpgam", b), seconds = r[1], score = r[2], measure = "RMSE", coverage = NA)
}
r <- cv(function(d) gam(accel ~ s(times, k = 20), data = d, method = "REML"))
add(data = "mcycle, 5-fold CV", method = "gam REML s(times, k = 20)", seconds = r[1], score = r[2], measure = "RMSE", coverage = NA)

# gamSim(1), 400 rows
for (seed in 1:3) {
  set.seed(seed)
  tr <- gamSim(1, n = 400, verbose = FALSE)
  te <- gamSim(1, n = 2000, verbose = FALSE)
  lab <- paste0("gamSim(1) n = 400, seed ", seed)
  for (b in c("inducing", "hilbert")) {
    f <- as.formula(paste("y ~", if (b == "hilbert") H("x0", "x1", "x2", "x3") else I("x0", "x1", "x2", "x3")))
    t <- tm(fit <- gpgam(f, data = tr, control = ctl))
    p <- predict(fit, te, se.fit = TRUE)
    add(data = lab, method = paste("gpgam", b), seconds = t, score = rmse(p$fit, te$f), measure = "RMSE of f",
        coverage = mean(abs(p$fit - te$f) <= 1.96 * p$se.fit))
  }
  t <- tm(g <- gam(y ~ s(x0) + s(x1) + s(x2) + s(x3), data = tr, method = "REML"))
  p <- predict(g, te, se.fit = TRUE)
  add(data = lab, method = "gam REML", seconds = t, score = rmse(p$fit, te$f), measure = "RMSE of f",
      coverage = mean(abs(p$fit - te$f) <= 1.96 * p$se.fit))
}

# the gam design, Gaussian
for (n in c(1e4, 1e5)) {
  set.seed(2)
  d <- gen(n)
  te <- gen(5000)
  lab <- sprintf("gam design, %g rows", n)
  for (b in c("inducing", "hilbert")) {
    f <- as.formula(paste("y ~", if (b == "hilbert") H("x1", "x2", "x3, x4") else I("x1", "x2", "x3, x4")))
    t <- tm(fit <- gpgam(f, data = d, control = ctl))
    p <- predict(fit, te, se.fit = TRUE)
    add(data = lab, method = paste("gpgam", b), seconds = t,
        score = -mean(dnorm(te$y, p$fit, sqrt(p$se.fit^2 + sigma(fit)^2), log = TRUE)), measure = "NLPD",
        coverage = mean(abs(p$fit - te$truth) <= 1.96 * p$se.fit))
  }
  t <- tm(g <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, discrete = TRUE))
  p <- predict(g, te, se.fit = TRUE)
  add(data = lab, method = "bam discrete", seconds = t,
      score = -mean(dnorm(te$y, p$fit, sqrt(p$se.fit^2 + g$sig2), log = TRUE)), measure = "NLPD",
      coverage = mean(abs(p$fit - te$truth) <= 1.96 * p$se.fit))
  if (n <= 1e4) {
    t <- tm(g <- gam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, method = "REML"))
    p <- predict(g, te, se.fit = TRUE)
    add(data = lab, method = "gam REML", seconds = t,
        score = -mean(dnorm(te$y, p$fit, sqrt(p$se.fit^2 + g$sig2), log = TRUE)), measure = "NLPD",
        coverage = mean(abs(p$fit - te$truth) <= 1.96 * p$se.fit))
  }
}

# gamSim(1) binary, 2000 rows
set.seed(3)
tr <- gamSim(1, n = 2000, dist = "binary", scale = 0.33, verbose = FALSE)
te <- gamSim(1, n = 2000, dist = "binary", scale = 0.33, verbose = FALSE)
for (b in c("inducing", "hilbert")) {
  f <- as.formula(paste("y ~", if (b == "hilbert") H("x0", "x1", "x2", "x3") else I("x0", "x1", "x2", "x3")))
  t <- tm(fit <- gpgam(f, data = tr, family = binomial(), control = ctl))
  p <- predict(fit, te, type = "response")
  add(data = "gamSim(1) binary, 2000 rows", method = sprintf("gpgam %s (%d passes, %d refits)", b, fit$passes, fit$hilbert_refits %||% 0L),
      seconds = t, score = -mean(dbinom(te$y, 1, p, log = TRUE)), measure = "NLPD", coverage = NA)
}
t <- tm(g <- gam(y ~ s(x0) + s(x1) + s(x2) + s(x3), data = tr, family = binomial(), method = "REML"))
add(data = "gamSim(1) binary, 2000 rows", method = "gam REML", seconds = t,
    score = -mean(dbinom(te$y, 1, predict(g, te, type = "response"), log = TRUE)), measure = "NLPD", coverage = NA)

}

if (large) {
  for (n in c(1e5, 1e6)) for (family in c("gaussian", "binomial")) {
    if (family == "gaussian" && n < 1e6) next  # (the small run has it)
    set.seed(4)
    d <- gen(n, family)
    te <- gen(5000, family)
    lab <- sprintf("gam design, %g rows, %s", n, family)
    fam <- if (family == "gaussian") gaussian() else binomial()
    for (b in c("inducing", "hilbert")) {
      f <- as.formula(paste("y ~", if (b == "hilbert") H("x1", "x2", "x3, x4") else I("x1", "x2", "x3, x4")))
      t <- tm(fit <- gpgam(f, data = d, family = fam, control = ctl))
      if (family == "gaussian") {
        p <- predict(fit, te, se.fit = TRUE)
        sc <- -mean(dnorm(te$y, p$fit, sqrt(p$se.fit^2 + sigma(fit)^2), log = TRUE))
      } else sc <- -mean(dbinom(te$y, 1, predict(fit, te, type = "response"), log = TRUE))
      add(data = lab, method = sprintf("gpgam %s (%d passes, %d refits)", b, fit$passes, fit$hilbert_refits %||% 0L),
          seconds = t, score = sc, measure = "NLPD", coverage = NA)
    }
    t <- tm(g <- bam(y ~ s(x1) + s(x2) + te(x3, x4), data = d, family = fam, discrete = TRUE))
    sc <- if (family == "gaussian") -mean(dnorm(te$y, predict(g, te), sqrt(predict(g, te, se.fit = TRUE)$se.fit^2 + g$sig2), log = TRUE))
          else -mean(dbinom(te$y, 1, predict(g, te, type = "response"), log = TRUE))
    add(data = lab, method = "bam discrete", seconds = t, score = sc, measure = "NLPD", coverage = NA)
  }
}

tab <- do.call(rbind, res)
cat("| data | method | seconds | score | measure | coverage of f |\n|---|---|---|---|---|---|\n")
for (i in seq_len(nrow(tab)))
  cat(sprintf("| %s | %s | %.3f | %.4f | %s | %s |\n", tab$data[i], tab$method[i], tab$seconds[i], tab$score[i],
              tab$measure[i], if (is.na(tab$coverage[i])) "-" else sprintf("%.3f", tab$coverage[i])))
