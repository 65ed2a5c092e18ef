# What an mgcv user would try first: mgcv's own examples fitted by gpgam()
# (defaults) and by mgcv::gam(method = "REML") (and bam() where relevant),
# side by side in one run.  Per data set: fit time, hold-out NLPD (Gaussian:
# -log predictive density; binary: log loss; Poisson: -log predictive
# probability; all integrating the latent posterior N(eta, se^2) the same way
# for both packages), and where the truth is known (gamSim) the RMSE of each
# centred term and the coverage of its 95% band at the test rows.  Also: the
# x1 term's coverage of gamSim(1) over 10 seeds and the rejection rate of the
# term test for a null term over 200 data sets.
#
#   Rscript bench/prompt_vs_mgcv.R            (writes bench/results/prompt_vs_mgcv.md)
suppressMessages({
  library(scalegp)
  library(mgcv)
})
out_md <- file.path("bench", "results", "prompt_vs_mgcv.md")
quiet <- function(expr) suppressWarnings(suppressMessages(expr))
ctl <- gp_control(verbose = FALSE, seed = 1)

source(file.path("bench", "scores.R"))  # nlpd(), term_scores()

rows <- list()
add <- function(dataset, method, n, time, nlpd, terms = NULL) {
  r <- data.frame(dataset = dataset, method = method, n = n, seconds = time, nlpd = nlpd,
                  term_rmse = if (is.null(terms)) NA else paste(sprintf("%.3f", terms["rmse", ]), collapse = " / "),
                  term_cover = if (is.null(terms)) NA else paste(sprintf("%.2f", terms["cover", ]), collapse = " / "),
                  stringsAsFactors = FALSE)
  rows[[length(rows) + 1]] <<- r
  print(r)
}

# ---- gamSim examples (truth known) ------------------------------------------------
gs <- function(eg, n, dist, scale, seed) {
  set.seed(seed)
  quiet(gamSim(eg, n = n, dist = dist, scale = scale, verbose = FALSE))
}
sims <- list(
  list(name = "gamSim(1) gaussian", eg = 1, n = 2000, dist = "normal", scale = 2, fam = "gaussian",
       gp = y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3), mg = y ~ s(x0) + s(x1) + s(x2) + s(x3), f = paste0("f", 0:3)),
  list(name = "gamSim(1) binary", eg = 1, n = 2000, dist = "binary", scale = 1, fam = "binomial",
       gp = y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3), mg = y ~ s(x0) + s(x1) + s(x2) + s(x3), f = paste0("f", 0:3)),
  list(name = "gamSim(1) poisson", eg = 1, n = 4000, dist = "poisson", scale = 0.2, fam = "poisson",
       gp = y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3), mg = y ~ s(x0) + s(x1) + s(x2) + s(x3), f = paste0("f", 0:3)),
  list(name = "gamSim(2) gaussian (2-D)", eg = 2, n = 1000, dist = "normal", scale = 0.1, fam = "gaussian",
       gp = y ~ gp(x, z), mg = y ~ s(x, z, k = 40), f = NULL),
  list(name = "gamSim(5) gaussian (+ factor)", eg = 5, n = 1000, dist = "normal", scale = 2, fam = "gaussian",
       gp = y ~ x0 + gp(x1) + gp(x2) + gp(x3), mg = y ~ x0 + s(x1) + s(x2) + s(x3), f = c("f1", "f2", "f3"))
)
for (s in sims) {
  tr <- gs(s$eg, s$n, s$dist, s$scale, 1)
  te <- gs(s$eg, s$n, s$dist, s$scale, 2)
  if (s$eg == 2) { tr <- tr$data; te <- te$data }
  if (s$eg == 5) {  # gamSim(5) returns no truth: its terms are exp(2 x1), f2(x2) of gamSim(1) and 0 (x3)
    te$f1 <- exp(2 * te$x1)
    te$f2 <- 0.2 * te$x2^11 * (10 * (1 - te$x2))^6 + 10 * (10 * te$x2)^3 * (1 - te$x2)^10
    te$f3 <- 0 * te$x3
  }
  fam <- switch(s$fam, gaussian = gaussian(), binomial = binomial(), poisson = poisson())
  t_gp <- system.time(g <- gpgam(s$gp, data = tr, family = fam, control = ctl))[["elapsed"]]
  t_mg <- system.time(m <- gam(s$mg, data = tr, family = fam, method = "REML"))[["elapsed"]]
  pg <- predict(g, te, se.fit = TRUE)
  pm <- predict(m, te, se.fit = TRUE)
  sg <- if (s$fam == "gaussian") sigma(g) else 1
  sm <- if (s$fam == "gaussian") sqrt(m$sig2) else 1
  sc_g <- sc_m <- NULL
  if (!is.null(s$f)) {
    tg <- predict(g, te, type = "terms", se.fit = TRUE)
    tm <- predict(m, te, type = "terms", se.fit = TRUE)
    lab_g <- grep("^gp", colnames(tg$fit), value = TRUE)
    lab_m <- grep("^s\\(", colnames(tm$fit), value = TRUE)
    # gamSim's f columns are unscaled; a Poisson predictor is scale * f
    fs <- if (s$dist == "poisson") s$scale else 1
    sc_g <- sapply(seq_along(s$f), function(k) term_scores(tg$fit[, lab_g[k]], tg$se.fit[, lab_g[k]], fs * te[[s$f[k]]]))
    sc_m <- sapply(seq_along(s$f), function(k) term_scores(tm$fit[, lab_m[k]], tm$se.fit[, lab_m[k]], fs * te[[s$f[k]]]))
  }
  add(s$name, sprintf("gpgam (%s)", if (g$converged) "converged" else "NOT converged"), s$n, t_gp,
      nlpd(s$fam, te$y, pg$fit, pg$se.fit, sg), sc_g)
  add(s$name, "gam REML", s$n, t_mg, nlpd(s$fam, te$y, pm$fit, pm$se.fit, sm), sc_m)
}

# ---- real data by 5-fold cross-validation -----------------------------------------
cv <- function(name, data, fg, fm, fam, yfun) {
  set.seed(1)
  fold <- sample(rep(1:5, length.out = nrow(data)))
  res <- sapply(1:5, function(k) {
    tr <- data[fold != k, ]
    te <- data[fold == k, ]
    tg <- system.time(g <- gpgam(fg, data = tr, family = fam, control = ctl))[["elapsed"]]
    tm <- system.time(m <- gam(fm, data = tr, family = fam, method = "REML"))[["elapsed"]]
    pg <- predict(g, te, se.fit = TRUE)
    pm <- predict(m, te, se.fit = TRUE)
    fname <- if (fam$family == "binomial") "binomial" else fam$family
    sg <- if (fname == "gaussian") sigma(g) else 1
    sm <- if (fname == "gaussian") sqrt(m$sig2) else 1
    y <- yfun(te)
    c(tg, nlpd(fname, y, pg$fit, pg$se.fit, sg), tm, nlpd(fname, y, pm$fit, pm$se.fit, sm), g$converged)
  })
  add(name, sprintf("gpgam (%d/5 converged)", sum(res[5, ])), nrow(data), sum(res[1, ]), mean(res[2, ]))
  add(name, "gam REML", nrow(data), sum(res[3, ]), mean(res[4, ]))
}
data(mcycle, package = "MASS")
cv("MASS::mcycle (5-fold CV)", mcycle, accel ~ gp(times), accel ~ s(times, k = 20), gaussian(), function(d) d$accel)
data(Boston, package = "MASS")
B <- Boston
B$chas <- factor(B$chas)
cv("MASS::Boston log(medv), 7 smooths + chas (5-fold CV)", B,
   log(medv) ~ gp(crim) + gp(nox) + gp(rm) + gp(dis) + gp(tax) + gp(ptratio) + gp(lstat) + chas,
   log(medv) ~ s(crim) + s(nox) + s(rm) + s(dis) + s(tax) + s(ptratio) + s(lstat) + chas, gaussian(),
   function(d) log(d$medv))
if (requireNamespace("mlbench", quietly = TRUE)) {
  data("PimaIndiansDiabetes", package = "mlbench")
  P <- PimaIndiansDiabetes
  P$y <- as.numeric(P$diabetes == "pos")
  cv("Pima (mlbench), logit (5-fold CV)", P,
     y ~ gp(pregnant) + gp(glucose) + gp(pressure) + gp(mass) + gp(pedigree) + gp(age),
     y ~ s(pregnant) + s(glucose) + s(pressure) + s(mass) + s(pedigree) + s(age), binomial(), function(d) d$y)
}

# ---- coverage of gamSim(1)'s x1 term over 10 seeds ---------------------------------
cover_x1 <- t(sapply(1:10, function(seed) {
  tr <- gs(1, 400, "normal", 2, seed)
  g <- gpgam(y ~ gp(x0) + gp(x1) + gp(x2) + gp(x3), data = tr, control = gp_control(verbose = FALSE, seed = seed))
  m <- gam(y ~ s(x0) + s(x1) + s(x2) + s(x3), data = tr, method = "REML")
  tg <- predict(g, type = "terms", se.fit = TRUE)
  tm <- predict(m, type = "terms", se.fit = TRUE)
  c(gpgam = term_scores(tg$fit[, "gp(x1)"], tg$se.fit[, "gp(x1)"], tr$f1)[["cover"]],
    gam = term_scores(tm$fit[, "s(x1)"], tm$se.fit[, "s(x1)"], tr$f1)[["cover"]])
}))

# ---- the term test for a null term: rejection rate over 200 data sets -----------------
null_p <- sapply(1:200, function(seed) {
  set.seed(seed)
  d <- data.frame(x0 = runif(200), x1 = runif(200))
  d$y <- sin(2 * pi * d$x0) + rnorm(200, sd = 0.5)
  g <- gpgam(y ~ gp(x0) + gp(x1), data = d, control = gp_control(verbose = FALSE, seed = seed, inducing = 15))
  summary(g)$s.table["gp(x1)", "p-value"]
})

tab <- do.call(rbind, rows)
fmt <- function(x, d) ifelse(is.na(x), "-", formatC(x, format = "f", digits = d))
md <- c("# gpgam() against mgcv on mgcv's examples and real data (defaults on both sides)", "",
        sprintf("Command: `Rscript bench/prompt_vs_mgcv.R`; %s; %s, %d cores; mgcv %s; scalegp %s.",
                format(Sys.Date()), R.version$platform, parallel::detectCores(), packageVersion("mgcv"),
                packageVersion("scalegp")), "",
        "Hold-out: gamSim, a second data set of the same size (seed 2); real data, 5-fold CV (mean NLPD, total time).",
        "NLPD integrates the latent posterior N(eta, se^2) in the same way for both packages.",
        "Term RMSE and 95% coverage: per smooth term in order, against the truth centred at the test rows.", "",
        "| data | method | n | seconds | NLPD | term RMSE | term 95% coverage |", "|---|---|---|---|---|---|---|",
        sprintf("| %s | %s | %d | %s | %s | %s | %s |", tab$dataset, tab$method, tab$n, fmt(tab$seconds, 2),
                fmt(tab$nlpd, 4), ifelse(is.na(tab$term_rmse), "-", tab$term_rmse),
                ifelse(is.na(tab$term_cover), "-", tab$term_cover)), "",
        sprintf("gamSim(1), n = 400, 10 seeds: coverage of the 95%% band of the x1 term (at the data), gpgam mean %.3f (min %.2f), gam REML mean %.3f (min %.2f).",
                mean(cover_x1[, 1]), min(cover_x1[, 1]), mean(cover_x1[, 2]), min(cover_x1[, 2])), "",
        sprintf("Term test of a null gp() term (y = sin(2 pi x0) + noise, gp(x0) + gp(x1), n = 200, 200 data sets): rejection rate %.3f at 5%%, %.3f at 10%%; median p-value %.2f.",
                mean(null_p < 0.05), mean(null_p < 0.1), stats::median(null_p)))
writeLines(md, out_md)
saveRDS(list(table = tab, cover_x1 = cover_x1, null_p = null_p), sub("md$", "rds", out_md))
cat(md, sep = "\n")
