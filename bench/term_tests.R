# bench/term_tests.R: size and power of summary()'s test that a gp() term is
# zero, against mgcv's (summary.gam, REML), defaults on both sides.
#   Rscript bench/term_tests.R [null draws, default 300] [alternative draws, default 100] > bench/results/term_tests.md
# Design: n = 400, x, w ~ U(0, 1), the predictor sin(2 pi x) + a g(w);
# gpgam fits y ~ gp(x) + gp(w), mgcv y ~ s(x) + s(w); the table gives the
# share of draws whose p-value for the w term is below 1%, 5% and 10%.
# Null: a = 0; linear: g(w) = w - 1/2; wiggly: g(w) = sin(4 pi w); a per
# family below.  The "random effect" rows test gp(f) in y ~ gp(x) + gp(f)
# (mgcv: s(f, bs = "re")) for a factor f of 10 levels without effect.  Gaussian noise sd 1; binomial y ~ Bernoulli(plogis(eta)),
# and for the EP rows (which fit the probit link only) pnorm(eta), both
# packages with the probit link.
# "weighted" is summary()'s p-value (the statistic's distribution over
# repeated data when the term is zero, a weighted sum of chi-squares);
# "chi2(r)" refers the same statistic to chi-squared(Ref.df), the reference of
# the builds before 2026-12-03.  One fit per draw gives both (Chi.sq and
# Ref.df did not change).
suppressMessages({library(scalegp); library(mgcv)})
args <- commandArgs(TRUE)
n_null <- if (length(args) >= 1) as.integer(args[1]) else 300L
n_alt <- if (length(args) >= 2) as.integer(args[2]) else 100L
n <- 400

one <- function(seed, fam, shape, a, inference) {
  set.seed(seed)
  x <- runif(n)
  w <- runif(n)
  g <- switch(shape, null = 0, linear = w - 0.5, wiggly = sin(4 * pi * w), re = 0)
  eta <- sin(2 * pi * x) + a * g
  y <- if (fam == "binomial") rbinom(n, 1, if (inference == "ep") pnorm(eta) else plogis(eta)) else eta + rnorm(n)
  d <- data.frame(y, x, w, f = factor(sample(10, n, TRUE)))
  family <- if (fam != "binomial") gaussian() else if (inference == "ep") binomial("probit") else binomial()
  # the term tested: gp(w) / s(w), or (shape "re") the random effect gp(f) / s(f, bs = "re")
  re <- shape == "re"
  lab <- if (re) c("gp(f)", "s(f)") else c("gp(w)", "s(w)")
  t0 <- proc.time()[["elapsed"]]
  fit <- suppressWarnings(gpgam(if (re) y ~ gp(x) + gp(f) else y ~ gp(x) + gp(w), data = d, family = family,
                                inference = inference, control = gp_control(verbose = FALSE)))
  st <- summary(fit)$s.table
  t1 <- proc.time()[["elapsed"]]
  m <- gam(if (re) y ~ s(x) + s(f, bs = "re") else y ~ s(x) + s(w), data = d, family = family, method = "REML")
  sm <- summary(m)$s.table
  t2 <- proc.time()[["elapsed"]]
  c(weighted = st[lab[1], "p-value"],
    chi2 = pchisq(st[lab[1], "Chi.sq"], st[lab[1], "Ref.df"], lower.tail = FALSE),
    mgcv = sm[lab[2], "p-value"], edf = st[lab[1], "edf"], mgcv_edf = sm[lab[2], "edf"],
    seconds = t1 - t0, mgcv_seconds = t2 - t1)
}

cases <- list(
  list("gaussian", "null", 0, "vi", n_null), list("gaussian", "linear", 0.6, "vi", n_alt),
  list("gaussian", "wiggly", 0.25, "vi", n_alt),
  list("binomial", "null", 0, "vi", n_null), list("binomial", "linear", 1.2, "vi", n_alt),
  list("binomial", "wiggly", 0.8, "vi", n_alt),
  list("binomial", "null", 0, "ep", n_null),
  list("gaussian", "re", 0, "vi", n_null))
cat("# Size and power of the gp() term test\n\n")
cat(sprintf("`Rscript bench/term_tests.R %d %d`, %s, scalegp %s, mgcv %s; n = %d per draw.\n\n",
            n_null, n_alt, format(Sys.Date()), packageVersion("scalegp"), packageVersion("mgcv"), n))
cat("| family | engine | w effect | draws | level | gpgam weighted | gpgam chi2(r) | mgcv |\n|---|---|---|---|---|---|---|---|\n")
detail <- list()
for (cs in cases) {
  res <- t(vapply(seq_len(cs[[5]]), function(s) one(s, cs[[1]], cs[[2]], cs[[3]], cs[[4]]), numeric(7)))
  detail[[length(detail) + 1]] <- data.frame(family = cs[[1]], shape = cs[[2]], a = cs[[3]], inference = cs[[4]], res)
  for (lev in c(0.01, 0.05, 0.10))
    cat(sprintf("| %s | %s | %s | %d | %.2f | %.3f | %.3f | %.3f |\n", cs[[1]], cs[[4]],
                if (cs[[2]] == "re") "none (random effect f)" else if (cs[[3]] == 0) "none"
                else sprintf("%s, a = %g", cs[[2]], cs[[3]]), cs[[5]], lev,
                mean(res[, "weighted"] < lev), mean(res[, "chi2"] < lev), mean(res[, "mgcv"] < lev)))
}
detail <- do.call(rbind, detail)
cat("\nMedian edf of the tested term (gpgam / mgcv) and seconds per fit:\n\n")
cat("| family | engine | w effect | edf gpgam | edf mgcv | s gpgam | s mgcv |\n|---|---|---|---|---|---|---|\n")
for (k in split(detail, interaction(detail$family, detail$shape, detail$inference, drop = TRUE, lex.order = TRUE)))
  cat(sprintf("| %s | %s | %s | %.2f | %.2f | %.3f | %.3f |\n", k$family[1], k$inference[1], k$shape[1],
              median(k$edf), median(k$mgcv_edf), median(k$seconds), median(k$mgcv_seconds)))
