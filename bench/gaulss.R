# The location-scale Gaussian: gpgam(list(y ~ ..., ~ ...), family =
# mgcv::gaulss()) with defaults against mgcv::gam(list(...), family =
# gaulss()) (REML), same formulas (s() for gp()).
#   (a) simulated, where the truth is known: y = mu(x) + exp(g(x)) e,
#       "one input":  mu = sin(2 pi x1) + 0.5 z, g = -1.6 + 1.4 x1^2 + 0.4 sin(6 x1),
#                     formulas list(y ~ s(x1) + z, ~ s(x1));
#       "two inputs": mu = sin(2 pi x1) + (2 x2 - 1)^2 + 0.5 z, g = -1.2 + 0.8 cos(2 pi x2) + 0.6 x1,
#                     formulas list(y ~ s(x1) + s(x2) + z, ~ s(x1) + s(x2));
#       per fit: seconds, RMSE of the mean and of the log sd against the truth
#       at the training rows, how often the 95% posterior band of each
#       predictor covers the truth there, the coverage of the 95% prediction
#       interval of new y and the test NLPD on a second draw of 4000 rows.  mgcv's
#       predictive is its plug-in N(mu, sigma^2) (its predict() gives no
#       interval for a new y); ours integrates the posterior of both
#       predictors (predict(interval = "prediction"); the density by
#       Gauss-Hermite over g).
#   (b) MASS::mcycle (133 rows, accel ~ times): 10-fold CV (folds seeded),
#       the same measures on the held-out rows, and the time of one fit to all rows.
#   (c) design "two inputs" at 1e4, 5e4 and 2e5 rows, one draw each (mgcv to 5e4).
#
#   Rscript bench/gaulss.R [replicates = 5] [n = 1000]   (writes bench/results/gaulss.md)
suppressMessages({
  library(scalegp)
  library(mgcv)
})
args <- commandArgs(trailingOnly = TRUE)
reps <- if (length(args) >= 1) as.integer(args[1]) else 5L
n <- if (length(args) >= 2) as.integer(args[2]) else 1000L
source(file.path("inst", "replication", "stamp.R"))
st <- stamp()
ctl <- gp_control(verbose = FALSE, seed = 1)

draw <- function(design, n, seed) {
  set.seed(seed)
  d <- data.frame(x1 = runif(n), x2 = runif(n), z = rnorm(n))
  if (design == "one input") {
    d$mu <- sin(2 * pi * d$x1) + 0.5 * d$z
    d$lsd <- -1.6 + 1.4 * d$x1^2 + 0.4 * sin(6 * d$x1)
  } else {
    d$mu <- sin(2 * pi * d$x1) + (2 * d$x2 - 1)^2 + 0.5 * d$z
    d$lsd <- -1.2 + 0.8 * cos(2 * pi * d$x2) + 0.6 * d$x1
  }
  d$y <- d$mu + exp(d$lsd) * rnorm(n)
  d
}
forms <- list(
  "one input" = list(gp = list(y ~ gp(x1) + z, ~ gp(x1)), mgcv = list(y ~ s(x1) + z, ~ s(x1))),
  "two inputs" = list(gp = list(y ~ gp(x1) + gp(x2) + z, ~ gp(x1) + gp(x2)),
                      mgcv = list(y ~ s(x1) + s(x2) + z, ~ s(x1) + s(x2))))

gh <- scalegp:::gauss_hermite(20)
# ours: -log of the predictive density, mixing N(m_f, v_f + exp(2 g)) over g ~ N(m_g, s_g^2)
nlpd_gp <- function(fit, nd, y) {
  lp <- predict(fit, nd, type = "link", se.fit = TRUE)
  g <- outer(lp$se.fit[, "log_sd"], sqrt(2) * gh$t) + lp$fit[, "log_sd"]
  dens <- stats::dnorm(y, lp$fit[, "mean"], sqrt(lp$se.fit[, "mean"]^2 + exp(2 * g)))
  -mean(log(drop(dens %*% (gh$w / sqrt(pi)))))
}
score <- function(which, fit, d, nd, secs) {
  if (which == "gpgam") {
    lp <- predict(fit, d, type = "link", se.fit = TRUE)
    mu <- lp$fit[, "mean"]; lsd <- lp$fit[, "log_sd"]
    band_mu <- cbind(mu - 1.96 * lp$se.fit[, "mean"], mu + 1.96 * lp$se.fit[, "mean"])
    band_lsd <- cbind(lsd - 1.96 * lp$se.fit[, "log_sd"], lsd + 1.96 * lp$se.fit[, "log_sd"])
    p <- predict(fit, nd, interval = "prediction")
    lwr <- p[, "lwr"]; upr <- p[, "upr"]
    nlpd <- nlpd_gp(fit, nd, nd$y)
  } else {
    r <- predict(fit, d, type = "response")
    mu <- r[, 1]; lsd <- -log(r[, 2])
    # bands: each linear predictor +/- 1.96 se, the second mapped to log sd by its
    # (increasing) inverse link, log sd = -log(linkinv(eta))
    lk <- predict(fit, d, type = "link", se.fit = TRUE)
    inv2 <- fit$family$linfo[[2]]$linkinv
    band_mu <- cbind(lk$fit[, 1] - 1.96 * lk$se.fit[, 1], lk$fit[, 1] + 1.96 * lk$se.fit[, 1])
    band_lsd <- cbind(-log(inv2(lk$fit[, 2] - 1.96 * lk$se.fit[, 2])), -log(inv2(lk$fit[, 2] + 1.96 * lk$se.fit[, 2])))
    rn <- predict(fit, nd, type = "response")
    lwr <- rn[, 1] - 1.96 / rn[, 2]; upr <- rn[, 1] + 1.96 / rn[, 2]
    nlpd <- -mean(stats::dnorm(nd$y, rn[, 1], 1 / rn[, 2], log = TRUE))
  }
  covers <- function(band, truth) if (!is.null(truth)) mean(truth >= band[, 1] & truth <= band[, 2]) else NA
  data.frame(seconds = secs, rmse_mean = if (!is.null(d$mu)) sqrt(mean((mu - d$mu)^2)) else NA,
             rmse_log_sd = if (!is.null(d$lsd)) sqrt(mean((lsd - d$lsd)^2)) else NA,
             band_mean = covers(band_mu, d$mu), band_log_sd = covers(band_lsd, d$lsd),
             coverage = mean(nd$y >= lwr & nd$y <= upr), nlpd = nlpd)
}
timed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  v <- expr
  list(value = v, secs = proc.time()[["elapsed"]] - t0)
}

rows <- list()
for (design in names(forms)) for (rep in seq_len(reps)) {
  d <- draw(design, n, 100 + rep)
  nd <- draw(design, 4000, 200 + rep)
  a <- timed(gpgam(forms[[design]]$gp, data = d, family = gaulss(), control = ctl))
  b <- timed(suppressWarnings(gam(forms[[design]]$mgcv, data = d, family = gaulss())))
  rows[[length(rows) + 1]] <- cbind(design = design, rep = rep, method = "gpgam", cycles = a$value$iterations,
                                    converged = a$value$converged, score("gpgam", a$value, d, nd, a$secs))
  rows[[length(rows) + 1]] <- cbind(design = design, rep = rep, method = "mgcv gam", cycles = NA,
                                    converged = NA, score("mgcv", b$value, d, nd, b$secs))
  cat(design, rep, "done\n")
}
sim <- do.call(rbind, rows)

# mcycle, 10-fold CV
data(mcycle, package = "MASS")
set.seed(1)
fold <- sample(rep(1:10, length.out = nrow(mcycle)))
cv <- list()
for (k in 1:10) {
  tr <- mcycle[fold != k, ]
  te <- mcycle[fold == k, ]
  te$y <- te$accel  # (score() reads the response as y)
  a <- timed(gpgam(list(accel ~ gp(times), ~ gp(times)), data = tr, family = gaulss(), control = ctl))
  b <- timed(suppressWarnings(gam(list(accel ~ s(times, k = 20), ~ s(times)), data = tr, family = gaulss())))
  cv[[length(cv) + 1]] <- cbind(fold = k, method = "gpgam", score("gpgam", a$value, te, te, a$secs), n = nrow(te))
  cv[[length(cv) + 1]] <- cbind(fold = k, method = "mgcv gam", score("mgcv", b$value, te, te, b$secs), n = nrow(te))
}
cv <- do.call(rbind, cv)
# (c) larger n, design "two inputs": one fit each (mgcv's gaulss() has no bam(); gam() only up to 5e4 rows)
big <- list()
for (nb in c(1e4, 5e4, 2e5)) {
  d <- draw("two inputs", nb, 300)
  nd <- draw("two inputs", 4000, 301)
  a <- timed(gpgam(forms[["two inputs"]]$gp, data = d, family = gaulss(), control = ctl))
  big[[length(big) + 1]] <- cbind(n = nb, method = "gpgam", cycles = a$value$iterations,
                                  score("gpgam", a$value, d, nd, a$secs))
  if (nb <= 5e4) {
    b <- timed(suppressWarnings(gam(forms[["two inputs"]]$mgcv, data = d, family = gaulss())))
    big[[length(big) + 1]] <- cbind(n = nb, method = "mgcv gam", cycles = NA, score("mgcv", b$value, d, nd, b$secs))
  }
  cat("n =", nb, "done\n")
}
big <- do.call(rbind, big)

full_a <- timed(gpgam(list(accel ~ gp(times), ~ gp(times)), data = mcycle, family = gaulss(), control = ctl))
full_b <- timed(suppressWarnings(gam(list(accel ~ s(times, k = 20), ~ s(times)), data = mcycle, family = gaulss())))

agg <- function(df, by) {
  out <- stats::aggregate(df[c("seconds", "rmse_mean", "rmse_log_sd", "band_mean", "band_log_sd", "coverage", "nlpd")],
                          df[by], mean)
  out[order(out[[by[1]]]), ]
}
fmt <- function(df) {
  num <- vapply(df, is.double, TRUE)
  df[num] <- lapply(df[num], function(v) formatC(v, digits = 3, format = "f"))
  paste0("| ", apply(df, 1, paste, collapse = " | "), " |")
}
s_agg <- agg(sim, c("design", "method"))
cv_w <- stats::aggregate(cbind(coverage = cv$coverage * cv$n, nlpd = cv$nlpd * cv$n, seconds = cv$seconds) ~ method,
                         data = cv, sum)
cv_w$coverage <- cv_w$coverage / nrow(mcycle)
cv_w$nlpd <- cv_w$nlpd / nrow(mcycle)
cv_w$seconds <- cv_w$seconds / 10
lines <- c(
  "# Location-scale Gaussian: gpgam(family = gaulss()) against mgcv's gam(family = gaulss())",
  "",
  sprintf("`Rscript bench/gaulss.R %d %d`, scalegp %s (commit %s), %s, %s; defaults on both sides (mgcv REML, s() for gp()), one run each.",
          reps, n, st$version, st$commit, st$date, R.version.string),
  "",
  sprintf("## (a) Simulated heteroscedastic data, %d training rows, %d replicates; test draw of 4000 rows", n, reps),
  "",
  "Means over the replicates. RMSE against the true mean and log sd at the training rows, and the share of those rows where the 95% posterior band of each predictor (+/- 1.96 se) covers the truth; coverage of the 95% prediction interval of new y and test NLPD on the test draw (mgcv: plug-in N(mu, sigma^2)).",
  "",
  "| design | method | seconds | RMSE mean | RMSE log sd | 95% band covers mean | 95% band covers log sd | 95% PI coverage | test NLPD |",
  "|---|---|---|---|---|---|---|---|---|",
  fmt(s_agg),
  "",
  "Per replicate:",
  "",
  "| design | rep | method | cycles | converged | seconds | RMSE mean | RMSE log sd | band mean | band log sd | PI coverage | NLPD |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|",
  fmt(sim),
  "",
  "## (b) MASS::mcycle, 10-fold CV (accel ~ times for both predictors; mgcv k = 20 for the mean)",
  "",
  "Held-out rows pooled over the folds; seconds: mean per fold; one fit to all 133 rows below.",
  "",
  "| method | 95% PI coverage | test NLPD | seconds per fit |",
  "|---|---|---|---|",
  fmt(cv_w[c("method", "coverage", "nlpd", "seconds")]),
  "",
  sprintf("Fit to all 133 rows: gpgam %.2f s (%d cycles, converged %s), mgcv gam %.2f s.",
          full_a$secs, full_a$value$iterations, full_a$value$converged, full_b$secs),
  "",
  "## (c) Larger n, design \"two inputs\", one draw each (test draw of 4000 rows)",
  "",
  "mgcv's gaulss() is fitted by gam() only (bam() does not take it), here up to 5e4 rows.",
  "",
  "| n | method | cycles | seconds | RMSE mean | RMSE log sd | band mean | band log sd | 95% PI coverage | test NLPD |",
  "|---|---|---|---|---|---|---|---|---|---|",
  fmt(transform(big, n = format(n, big.mark = ",", scientific = FALSE))),
  "")
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(lines, file.path("bench", "results", "gaulss.md"))
cat(lines, sep = "\n")
