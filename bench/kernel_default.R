# Which kernel should gp() use by default?  The squared exponential ("se"),
# Matern 5/2 or Matern 3/2, each in every term of otherwise default gpgam()
# fits, with mgcv::gam(method = "REML") beside them in the same run:
#
#  (a) gamSim(1) (mgcv's first example), Gaussian (scale 2) at 400 and 2000
#      rows and binary at 1000 rows, over several seeds: per term, the RMSE
#      of the centred term against the centred truth at the data rows and the
#      coverage of its 95% band there; averaged over seeds and terms, and the
#      worst term-seed coverage;
#  (b) real data by 5-fold cross-validation (the folds of
#      bench/prompt_vs_mgcv.R): MASS::mcycle, MASS::Boston log(medv) with 7
#      smooths, Pima (mlbench) logit; mean test NLPD and total time;
#  (c) one gp() over all inputs: kin8nm and power (PBP split 0), Sonar
#      (mlbench, 5-fold CV, logit): test NLPD, RMSE and time.
#
# Coverage over designs the package's other benches already measured
# (Friedman-type function: seed004_coverage.md; a smooth 4-term design:
# coverage_draws*.md) is not repeated here.
#
#   Rscript bench/kernel_default.R [seeds400] [seeds2000] [seeds_binary] [variants] [out]
#   (defaults 20 10 10 kernels kernel_default.md; writes bench/results/<out>).
#   variants: "kernels" (SE, Matern 5/2, Matern 3/2) or "fixed_inducing" (SE
#   and Matern 5/2, each with the inducing inputs moved or held fixed)
suppressMessages({
  library(scalegp)
  library(mgcv)
})
args <- commandArgs(trailingOnly = TRUE)
n_seeds <- c(20, 10, 10)
if (length(args)) n_seeds[seq_len(min(3, length(args)))] <- as.integer(args[seq_len(min(3, length(args)))])
set_name <- if (length(args) >= 4) args[4] else "kernels"
out_md <- file.path("bench", "results", if (length(args) >= 5) args[5] else "kernel_default.md")
quiet <- function(expr) suppressWarnings(suppressMessages(expr))
# the variants compared: a kernel for every gp() term, and extra gp_control() arguments
variant_sets <- list(
  kernels = list(se = list(kernel = "se"), matern52 = list(kernel = "matern52"), matern32 = list(kernel = "matern32")),
  # the same kernels with the inducing inputs held at their k-means start
  fixed_inducing = list(se = list(kernel = "se"), matern52 = list(kernel = "matern52"),
                        "se, inducing fixed" = list(kernel = "se", ctl = list(learn_inducing = FALSE)),
                        "matern52, inducing fixed" = list(kernel = "matern52", ctl = list(learn_inducing = FALSE))))
variants <- variant_sets[[set_name]]
if (is.null(variants)) stop("unknown variant set '", set_name, "': ", paste(names(variant_sets), collapse = ", "))
ctl_of <- function(v, seed) do.call(gp_control, c(list(verbose = FALSE, seed = seed), v$ctl))

source(file.path("bench", "scores.R"))  # nlpd(), term_scores()
gp_formula <- function(resp, vars, kernel, extra = NULL)
  stats::as.formula(paste(resp, "~", paste(c(sprintf("gp(%s, kernel = \"%s\")", vars, kernel), extra),
                                         collapse = " + ")))
s_formula <- function(resp, vars, extra = NULL)
  stats::as.formula(paste(resp, "~", paste(c(sprintf("s(%s)", vars), extra), collapse = " + ")))

# ---- (a) gamSim(1): per-term RMSE and coverage at the data rows ---------------
vars <- paste0("x", 0:3)
sim_rows <- list()
sim_study <- function(label, n, dist, scale, seeds) {
  fam <- if (dist == "binary") binomial() else gaussian()
  res <- lapply(seq_len(seeds), function(seed) {
    set.seed(seed)
    d <- quiet(gamSim(1, n = n, dist = dist, scale = scale, verbose = FALSE))
    one <- function(method, fit_time, tt, lab) {
      sc <- sapply(seq_along(vars), function(k) term_scores(tt$fit[, lab[k]], tt$se.fit[, lab[k]], d[[paste0("f", k - 1)]]))
      data.frame(design = label, method = method, seed = seed, term = vars, seconds = fit_time,
                 rmse = sc["rmse", ], cover = sc["cover", ])
    }
    out <- lapply(names(variants), function(k) {
      t <- system.time(g <- quiet(gpgam(gp_formula("y", vars, variants[[k]]$kernel), data = d, family = fam,
                                        control = ctl_of(variants[[k]], seed))))[["elapsed"]]
      tt <- predict(g, type = "terms", se.fit = TRUE)
      one(paste("gpgam", k), t, tt, grep("^gp", colnames(tt$fit), value = TRUE))
    })
    t <- system.time(m <- gam(s_formula("y", vars), data = d, family = fam, method = "REML"))[["elapsed"]]
    tm <- predict(m, type = "terms", se.fit = TRUE)
    do.call(rbind, c(out, list(one("gam REML", t, tm, paste0("s(", vars, ")")))))
  })
  r <- do.call(rbind, res)
  agg <- do.call(rbind, lapply(split(r, factor(r$method, levels = unique(r$method))), function(x) {
    per_term <- tapply(x$cover, x$term, mean)
    data.frame(design = label, method = x$method[1], seeds = seeds,
               seconds_per_fit = mean(x$seconds[x$term == "x0"]),
               rmse = mean(x$rmse), cover = mean(x$cover),
               worst_term_mean_cover = min(per_term), worst_cover = min(x$cover),
               share_below_0.8 = mean(x$cover < 0.8))
  }))
  print(agg, row.names = FALSE)
  sim_rows[[length(sim_rows) + 1]] <<- agg
  invisible(r)
}
sim_study("gamSim(1) gaussian, 400 rows", 400, "normal", 2, n_seeds[1])
sim_study("gamSim(1) gaussian, 2000 rows", 2000, "normal", 2, n_seeds[2])
sim_study("gamSim(1) binary, 1000 rows", 1000, "binary", 1, n_seeds[3])

# ---- (b) real data: 5-fold CV NLPD ---------------------------------------------
cv_rows <- list()
cv_study <- function(label, data, resp, yfun, vars, extra, mg_vars, fam) {
  set.seed(1)
  fold <- sample(rep(1:5, length.out = nrow(data)))
  fname <- fam$family
  score <- function(fit_fun) {
    r <- sapply(1:5, function(k) {
      tr <- data[fold != k, ]
      te <- data[fold == k, ]
      t <- system.time(f <- fit_fun(tr))[["elapsed"]]
      p <- predict(f, te, se.fit = TRUE)
      s <- if (fname == "gaussian") (if (inherits(f, "gam")) sqrt(f$sig2) else sigma(f)) else 1
      c(t, nlpd(fname, yfun(te), p$fit, p$se.fit, s), sqrt(mean((yfun(te) - fam$linkinv(p$fit))^2)))
    })
    c(seconds = sum(r[1, ]), nlpd = mean(r[2, ]), rmse = mean(r[3, ]))
  }
  out <- lapply(names(variants), function(k) {
    f <- gp_formula(resp, vars, variants[[k]]$kernel, extra)
    c(method = paste("gpgam", k), as.list(score(function(tr) quiet(gpgam(f, data = tr, family = fam,
                                                                           control = ctl_of(variants[[k]], 1))))))
  })
  fm <- s_formula(resp, mg_vars, extra)
  out[[length(out) + 1]] <- c(method = "gam REML", as.list(score(function(tr) gam(fm, data = tr, family = fam, method = "REML"))))
  agg <- do.call(rbind, lapply(out, function(o) data.frame(data = label, method = o$method, seconds = o$seconds,
                                                          nlpd = o$nlpd, rmse = o$rmse)))
  print(agg, row.names = FALSE)
  cv_rows[[length(cv_rows) + 1]] <<- agg
}
data(mcycle, package = "MASS")
cv_study("MASS::mcycle", mcycle, "accel", function(d) d$accel, "times", NULL, "times, k = 20", gaussian())
data(Boston, package = "MASS")
B <- Boston
B$chas <- factor(B$chas)
bv <- c("crim", "nox", "rm", "dis", "tax", "ptratio", "lstat")
cv_study("MASS::Boston log(medv)", B, "log(medv)", function(d) log(d$medv), bv, "chas", bv, gaussian())
if (requireNamespace("mlbench", quietly = TRUE)) {
  data("PimaIndiansDiabetes", package = "mlbench")
  P <- PimaIndiansDiabetes
  P$y <- as.numeric(P$diabetes == "pos")
  pv <- c("pregnant", "glucose", "pressure", "mass", "pedigree", "age")
  cv_study("Pima (mlbench), logit", P, "y", function(d) d$y, pv, NULL, pv, binomial())
}

# ---- (c) one gp() over all inputs ---------------------------------------------------
# kin8nm and power (PBP split 0, bench/gpgp_sets.R), Sonar (mlbench; 5-fold
# CV, logit): test NLPD and RMSE of the mean response
joint_rows <- list()
joint <- function(label, tr, te, fam, y) {
  xs <- setdiff(names(tr), y)
  out <- lapply(names(variants), function(k) {
    f <- stats::as.formula(sprintf("%s ~ gp(%s, kernel = \"%s\")", y, paste(xs, collapse = ", "), variants[[k]]$kernel))
    t <- system.time(g <- quiet(gpgam(f, data = tr, family = fam, control = ctl_of(variants[[k]], 1))))[["elapsed"]]
    p <- predict(g, te, se.fit = TRUE)
    s <- if (fam$family == "gaussian") sigma(g) else 1
    c(t, nlpd(fam$family, te[[y]], p$fit, p$se.fit, s), sqrt(mean((te[[y]] - fam$linkinv(p$fit))^2)))
  })
  do.call(rbind, out)
}
source(file.path("bench", "gpgp_sets.R"))
for (set in c("kin8nm", "power")) {
  D <- load_set(set)
  r <- joint(set, D$tr, D$te, gaussian(), "y")
  joint_rows[[length(joint_rows) + 1]] <- data.frame(data = sprintf("%s (%d inputs, %d training rows, split 0)", set, D$p, nrow(D$tr)),
                                                     method = paste("gpgam", names(variants)), seconds = r[, 1], nlpd = r[, 2], rmse = r[, 3])
  print(joint_rows[[length(joint_rows)]], row.names = FALSE)
}
if (requireNamespace("mlbench", quietly = TRUE)) {
  data("Sonar", package = "mlbench")
  S <- Sonar
  S$y <- as.numeric(S$Class == "R")
  S$Class <- NULL
  set.seed(1)
  fold <- sample(rep(1:5, length.out = nrow(S)))
  r <- Reduce(`+`, lapply(1:5, function(k) joint("Sonar", S[fold != k, ], S[fold == k, ], binomial(), "y"))) / 5
  joint_rows[[length(joint_rows) + 1]] <- data.frame(data = "Sonar (60 inputs, 5-fold CV, logit)", method = paste("gpgam", names(variants)),
                                                     seconds = 5 * r[, 1], nlpd = r[, 2], rmse = r[, 3])
  print(joint_rows[[length(joint_rows)]], row.names = FALSE)
}

# ---- write ------------------------------------------------------------------------
sim_tab <- do.call(rbind, sim_rows)
cv_tab <- do.call(rbind, cv_rows)
joint_tab <- do.call(rbind, joint_rows)
fmt <- function(x, d = 3) formatC(x, format = "f", digits = d)
lines <- c(
  "# Default kernel of gp(): squared exponential against Matern 5/2 and 3/2",
  "",
  sprintf("Command: `Rscript bench/kernel_default.R %s`; %s; %s, %d cores; mgcv %s; scalegp %s.",
          paste(c(n_seeds, set_name, basename(out_md)), collapse = " "), format(Sys.Date()), R.version$platform, parallel::detectCores(),
          packageVersion("mgcv"), packageVersion("scalegp")),
  "",
  "Every gp() term of an otherwise default gpgam() fit uses the kernel named (\"inducing fixed\": gp_control(learn_inducing = FALSE));",
  "gam REML with s() defaults beside it.",
  "",
  "## gamSim(1): terms at the data rows (centred), over seeds",
  "",
  "Coverage: share of data rows where the 95% band covers the centred truth; means over seeds and the 4 terms;",
  "worst term: the term with the lowest mean coverage over seeds; worst: the lowest single term-seed coverage;",
  "below 0.8: share of term-seed pairs covering less than 0.8.",
  "",
  "| design | method | seeds | s per fit | term RMSE | coverage | worst term | worst | below 0.8 |",
  "|---|---|---|---|---|---|---|---|---|",
  with(sim_tab, sprintf("| %s | %s | %d | %.2f | %s | %s | %s | %s | %s |", design, method, seeds, seconds_per_fit,
                        fmt(rmse), fmt(cover), fmt(worst_term_mean_cover), fmt(worst_cover), fmt(share_below_0.8))),
  "",
  "## Real data, 5-fold cross-validation",
  "",
  "NLPD integrates the latent posterior N(eta, se^2) (and the noise) the same way for both packages; RMSE of the mean response.",
  "",
  "| data | method | seconds (5 fits) | test NLPD | test RMSE |",
  "|---|---|---|---|---|",
  with(cv_tab, sprintf("| %s | %s | %.2f | %s | %s |", data, method, seconds, fmt(nlpd, 4), fmt(rmse, 4))),
  "",
  "## One gp() over all inputs",
  "",
  "kin8nm and power: PBP split 0 (bench/gpgp_sets.R), Gaussian, test NLPD with the noise; Sonar: 5-fold CV, logit, log loss",
  "(mean over folds, total seconds). RMSE of the mean response (Sonar: of the probability).",
  "",
  "| data | method | seconds | test NLPD | test RMSE |",
  "|---|---|---|---|---|",
  with(joint_tab, sprintf("| %s | %s | %.2f | %s | %s |", data, method, seconds, fmt(nlpd, 4), fmt(rmse, 4))))
writeLines(lines, out_md)
cat(lines, sep = "\n")
