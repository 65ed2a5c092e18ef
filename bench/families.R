# Gamma(link = "log"), the negative binomial and the scaled t (mgcv::scat())
# with gpgam() defaults (inference = "vi") and with mgcv::gam(method =
# "REML"), on data drawn from each family, two designs:
#   "gamSim(1) log": the inputs and terms of mgcv's gamSim(1) (x0..x3, f0..f3,
#                    x3 a null term) on the log scale, eta = 0.1 * (f0 + f1 +
#                    f2 + f3) - 0.5, four smooth terms;
#   "sin(2 pi x)":   eta = 1 + sin(2 pi x), one smooth term.
# Gamma with shape 5, negative binomial with theta 3 (mgcv::nb(): estimated
# by both packages), scaled t on the identity link, y = eta + 0.3 t_4 (scale
# and df estimated by both).  Per fit: time, the estimated shape / theta / df
# (and the t's scale), per term the
# RMSE against the truth and the coverage of its 95% band (both centred at
# the test rows), and the test NLPD: -mean log p(y*) with the latent
# posterior N(eta, se^2) integrated out and each package's own parameters,
# computed by the same function (scalegp's adaptive Gauss-Hermite) for both.
# Test data: a second draw of the same size (seed 2).
#
#   Rscript bench/families.R            (writes bench/results/families.md)
suppressMessages({
  library(scalegp)
  library(mgcv)
})
out_md <- file.path("bench", "results", "families.md")
quiet <- function(expr) suppressWarnings(suppressMessages(expr))
ctl <- gp_control(verbose = FALSE, seed = 1)

draw <- function(design, family, n, seed) {
  set.seed(seed)
  if (design == "gamSim(1) log") {
    d <- quiet(gamSim(1, n = n, dist = "normal", scale = 1, verbose = FALSE))
    d <- d[c("x0", "x1", "x2", "x3", "f0", "f1", "f2", "f3")]
    tf <- 0.1 * d[c("f0", "f1", "f2", "f3")]
    names(tf) <- c("x0", "x1", "x2", "x3")
    eta <- rowSums(tf) - 0.5
  } else {
    d <- data.frame(x = runif(n))
    tf <- data.frame(x = sin(2 * pi * d$x))
    eta <- 1 + tf$x
  }
  d$y <- switch(family, Gamma = rgamma(n, shape = 5, rate = 5 / exp(eta)),
                "negative binomial" = rnbinom(n, size = 3, mu = exp(eta)),
                "scaled t" = eta + 0.3 * rt(n, 4))
  list(data = d, terms = tf)
}

source(file.path("bench", "scores.R"))  # term_scores()

rows <- list()
for (design in c("gamSim(1) log", "sin(2 pi x)")) {
  vars <- if (design == "gamSim(1) log") c("x0", "x1", "x2", "x3") else "x"
  fg <- stats::reformulate(sprintf("gp(%s)", vars), "y")
  fm <- stats::reformulate(sprintf("s(%s)", vars), "y")
  for (family in c("Gamma", "negative binomial", "scaled t")) {
    n <- 2000
    tr <- draw(design, family, n, 1)
    te <- draw(design, family, n, 2)
    lik <- switch(family, Gamma = "gamma", "negative binomial" = "negbin", "scaled t" = "scat")
    fam_g <- switch(family, Gamma = Gamma(link = "log"), "negative binomial" = nb(), "scaled t" = scat())
    t_g <- system.time(g <- gpgam(fg, data = tr$data, family = fam_g, control = ctl))[["elapsed"]]
    t_m <- system.time(m <- gam(fm, data = tr$data, family = fam_g, method = "REML"))[["elapsed"]]
    # the parameters as .lik_predictive() takes them (scaled t: scale^2, df, min.df)
    par_g <- switch(lik, gamma = g$params$shape, negbin = g$params$theta,
                    scat = c(g$params$sigma^2, g$params$df, g$params$min_df))
    th_m <- if (is.function(m$family$getTheta)) m$family$getTheta(TRUE)
    par_m <- switch(lik, gamma = 1 / m$scale, negbin = th_m, scat = c(th_m[2]^2, th_m[1], 3))
    pg <- predict(g, te$data, se.fit = TRUE)
    pm <- predict(m, te$data, se.fit = TRUE)
    nlpd <- function(p, par) -mean(scalegp:::.lik_predictive(lik, te$data$y, p$fit, p$se.fit^2, par, 20)[, 1])
    tg <- predict(g, te$data, type = "terms", se.fit = TRUE)
    tm <- predict(m, te$data, type = "terms", se.fit = TRUE)
    sc_g <- sapply(vars, function(v) term_scores(tg$fit[, sprintf("gp(%s)", v)], tg$se.fit[, sprintf("gp(%s)", v)], te$terms[[v]]))
    sc_m <- sapply(vars, function(v) term_scores(tm$fit[, sprintf("s(%s)", v)], tm$se.fit[, sprintf("s(%s)", v)], te$terms[[v]]))
    for (k in 1:2) {
      r <- data.frame(design = design, family = family,
                      method = if (k == 1) sprintf("gpgam (%s)", if (g$converged) "converged" else "NOT converged")
                               else "gam REML",
                      n = n, seconds = c(t_g, t_m)[k],
                      param = if (lik == "scat") c(par_g[2], par_m[2])[k] else c(par_g, par_m)[k],
                      scale = if (lik == "scat") sqrt(c(par_g[1], par_m[1])[k]) else NA_real_,
                      nlpd = c(nlpd(pg, par_g), nlpd(pm, par_m))[k],
                      rmse = paste(sprintf("%.3f", (if (k == 1) sc_g else sc_m)["rmse", ]), collapse = " / "),
                      cover = paste(sprintf("%.2f", (if (k == 1) sc_g else sc_m)["cover", ]), collapse = " / "),
                      stringsAsFactors = FALSE)
      rows[[length(rows) + 1]] <- r
      print(r)
    }
  }
}

tab <- do.call(rbind, rows)
md <- c("# Gamma, negative binomial and scaled t: gpgam() against mgcv::gam (defaults on both sides)", "",
        sprintf("Command: `Rscript bench/families.R`; %s; %s, %d cores; mgcv %s; scalegp %s.",
                format(Sys.Date()), R.version$platform, parallel::detectCores(), packageVersion("mgcv"),
                packageVersion("scalegp")), "",
        "Data drawn from each family (Gamma shape 5, negative binomial theta 3, log link; scaled t: identity link,",
        "y = eta + 0.3 t_4), n = 2000, test data a",
        "second draw of the same size. Designs: `gamSim(1) log`, the inputs and terms of mgcv's gamSim(1) with",
        "eta = 0.1 (f0 + f1 + f2 + f3) - 0.5 (x3 a null term); `sin(2 pi x)`, eta = 1 + sin(2 pi x).",
        "`shape/theta/df`: the estimate (truth 5 / 3 / 4); `t scale`: the scaled t's (truth 0.3). NLPD: -mean",
        "log p(y*) at the test rows, the latent posterior N(eta, se^2) integrated out with each package's",
        "parameters, by the same function for both.",
        "Term RMSE and 95% band coverage: per smooth term in order, against the truth, both centred at the test rows.", "",
        "| design | family | method | n | seconds | shape/theta/df | t scale | test NLPD | term RMSE | term 95% coverage |",
        "|---|---|---|---|---|---|---|---|---|---|",
        sprintf("| %s | %s | %s | %d | %.2f | %.3f | %s | %.4f | %s | %s |", tab$design, tab$family, tab$method, tab$n,
                tab$seconds, tab$param, ifelse(is.na(tab$scale), "", sprintf("%.3f", tab$scale)), tab$nlpd,
                tab$rmse, tab$cover))
writeLines(md, out_md)
cat(md, sep = "\n")
