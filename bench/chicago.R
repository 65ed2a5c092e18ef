# bench/chicago.R: mgcv's air-pollution example (gamair::chicago, Wood 2017,
# section 7.7.1) with gpgam() and mgcv side by side: daily deaths in Chicago
# (Poisson) against a long time trend and four pollution and weather
# covariates.  The time trend is wiggly (over 5000 days), so the basis size
# matters: mgcv's default k = 10 against the book's k = 200, and gpgam()'s
# default 20 inducing points against k = 100 and the Hilbert basis (which
# enlarges itself when the fitted lengthscale is too short for it).
# Held out: every fifth day; score: Poisson deviance of the held-out deaths
# at the predicted means (lower is better); edf of the time trend; wall time
# of the whole fit (threads = 2 for gpgam, gam on one core).
#   Rscript bench/chicago.R > bench/results/chicago.md      (needs gamair)
suppressMessages({library(scalegp); library(mgcv)})
if (!requireNamespace("gamair", quietly = TRUE)) stop("bench/chicago.R needs the gamair package")
data(chicago, package = "gamair")
d <- stats::na.omit(chicago[, c("death", "time", "pm10median", "so2median", "o3median", "tmpd")])
te <- seq(1, nrow(d), by = 5)
tr <- setdiff(seq_len(nrow(d)), te)
y <- d$death[te]
dev <- function(mu) 2 * sum(stats::dpois(y, y, log = TRUE) - stats::dpois(y, mu, log = TRUE))
tm <- function(expr) { t0 <- proc.time()[[3]]; force(expr); proc.time()[[3]] - t0 }
cov4 <- "pm10median) + s(so2median) + s(o3median) + s(tmpd)"
rows <- list()
add <- function(method, seconds, mu, edf, note = "")
  rows[[length(rows) + 1]] <<- data.frame(method = method, seconds = round(seconds, 2), `held-out deviance` = round(dev(mu), 1),
                                          `edf of time` = round(edf, 1), note = note, check.names = FALSE)
for (k in c(NA, 200)) {
  fo <- stats::as.formula(paste0("death ~ s(time", if (!is.na(k)) paste0(", k = ", k), ") + s(", cov4))
  s <- tm(g <- gam(fo, data = d[tr, ], family = poisson(), method = "REML"))
  add(if (is.na(k)) "gam REML, s(time) (k = 10)" else paste0("gam REML, s(time, k = ", k, ")"), s,
      predict(g, d[te, ], type = "response"), summary(g)$edf[1])
}
gp4 <- "gp(pm10median) + gp(so2median) + gp(o3median) + gp(tmpd)"
for (tt in c("gp(time)", "gp(time, k = 100)", "gp(time, basis = \"hilbert\")")) {
  fo <- stats::as.formula(paste("death ~", tt, "+", gp4))
  w <- character()
  s <- tm(f <- withCallingHandlers(gpgam(fo, data = d[tr, ], family = poisson(),
                                         control = gp_control(verbose = FALSE, threads = 2, seed = 1)),
                                   warning = function(x) { w <<- c(w, conditionMessage(x)); invokeRestart("muffleWarning") }))
  note <- paste0(if (isTRUE(f$converged)) "converged" else "NOT converged",
                 if (!is.null(f$hilbert_refits)) paste0("; ", f$hilbert_refits, " Hilbert refits, ",
                                                        f$terms$gp[[1]]$hilbert$m, " sines") else "",
                 if (length(w)) paste0("; warning: ", substr(w[1], 1, 60), "...") else "")
  add(paste0("gpgam, ", tt), s, predict(f, d[te, ], type = "response"), f$params$gp[[1]]$edf, note)
}
tab <- do.call(rbind, rows)
cat("# gamair::chicago: daily deaths, Poisson, time trend + four covariates\n\n")
cat(sprintf("`Rscript bench/chicago.R`, %s, %s, %s, mgcv %s, scalegp %s; %d days (rows with a missing covariate dropped), every fifth held out; one run each.\n\n",
            Sys.Date(), R.version$platform, R.version.string, utils::packageVersion("mgcv"),
            utils::packageVersion("scalegp"), nrow(d)))
cat(knitr::kable(tab, format = "pipe"), sep = "\n")
cat("\n")
