# The default lengthscale prior of a gp() term of several inputs against one
# whose lower tail does not narrow with the number of inputs.
#   default (gp_control(priors = TRUE)): inverse-gamma with 1% of its mass
#     below range / M^(1/d) and 1% above the range (M inducing points, d
#     inputs; R/components.R, hyper_priors());
#   "range / M": 1% below range / M (the spacing M points resolve along one
#     input), 1% above the range; swapped into the package's namespace for
#     this run only.
# Designs: y = sin(4 pi x1) + x2 + noise with x ~ U(0, 1)^p, one gp() over
# all p inputs (p = 3, 5, 8; 1000 rows, 2 seeds; RMSE of f and 95% band
# coverage on 1000 fresh rows); mgcv::gamSim(2) (gp(x, z), 400 rows, 4
# seeds; at the data rows); and one gp() over all inputs of six UCI sets of
# bench/kin8nm.R's protocol (splits 0-2 of ../shared/data/uci, at most 2000
# training rows; test RMSE and log-likelihood).
#   Rscript bench/prior_tails.R
# Writes bench/results/prior_tails.md.
suppressMessages({library(scalegp); library(mgcv)})
default_priors <- scalegp:::hyper_priors
per_input <- default_priors
i <- which(vapply(as.list(body(per_input)), function(e) grepl("^ab <-", deparse1(e)), TRUE))
stopifnot(length(i) == 1)
body(per_input)[[i]] <- quote(ab <- vapply(rng, function(r) inverse_gamma_from_tails(r / M, r), c(a = 0, b = 0)))
use <- function(f) utils::assignInNamespace("hyper_priors", f, "scalegp")
variants <- list("default" = default_priors, "range / M" = per_input)
ctl <- gp_control(seed = 1, threads = 2, verbose = FALSE)
rmse <- function(a, b) sqrt(mean((a - b)^2))
rows <- NULL
add <- function(...) rows <<- rbind(rows, data.frame(...))
uci <- file.path("..", "shared", "data", "uci")
for (v in names(variants)) {
  use(variants[[v]])
  for (p in c(3, 5, 8)) for (s in 1:2) {
    set.seed(24 + s)
    X <- as.data.frame(matrix(runif(1000 * p), 1000, p)); names(X) <- paste0("x", 1:p)
    f0 <- function(X) sin(4 * pi * X$x1) + X$x2
    X$y <- f0(X) + rnorm(1000, sd = 0.2)
    te <- as.data.frame(matrix(runif(1000 * p), 1000, p)); names(te) <- paste0("x", 1:p)
    fo <- as.formula(paste0("y ~ gp(", paste0("x", 1:p, collapse = ", "), ")"))
    t <- system.time(fit <- gpgam(fo, data = X, control = ctl))[["elapsed"]]
    pr <- predict(fit, te, se.fit = TRUE)
    add(variant = v, data = sprintf("sin(4 pi x1) + x2, gp() of %d inputs", p), split = s, seconds = t,
        rmse = rmse(pr$fit, f0(te)), ll = NA, cover = mean(abs(pr$fit - f0(te)) < 1.96 * pr$se.fit))
  }
  for (s in 1:4) {
    set.seed(s)
    d <- gamSim(2, n = 400, scale = 0.1, verbose = FALSE)$data
    t <- system.time(fit <- gpgam(y ~ gp(x, z), data = d, control = ctl))[["elapsed"]]
    pr <- predict(fit, d, se.fit = TRUE)
    add(variant = v, data = "gamSim(2), gp(x, z), 400 rows", split = s, seconds = t, rmse = rmse(pr$fit, d$f),
        ll = NA, cover = mean(abs(pr$fit - d$f) < 1.96 * pr$se.fit))
  }
  for (ds in c("bostonHousing", "concrete", "energy", "kin8nm", "yacht", "wine-quality-red")) {
    dir <- file.path(uci, ds)
    X <- as.matrix(utils::read.table(file.path(dir, "data.txt")))
    fi <- scan(file.path(dir, "index_features.txt"), quiet = TRUE) + 1
    ti <- scan(file.path(dir, "index_target.txt"), quiet = TRUE) + 1
    for (k in 0:2) {
      tr <- scan(file.path(dir, sprintf("index_train_%d.txt", k)), quiet = TRUE) + 1
      te <- scan(file.path(dir, sprintf("index_test_%d.txt", k)), quiet = TRUE) + 1
      if (length(tr) > 2000) {
        set.seed(k)
        tr <- sample(tr, 2000)
      }
      keep <- fi[apply(X[tr, fi], 2, function(v) length(unique(v)) > 2)]  # (binary inputs left out)
      d <- as.data.frame(X[, c(keep, ti)]); names(d) <- c(paste0("x", seq_along(keep)), "y")
      fo <- as.formula(paste0("y ~ gp(", paste0("x", seq_along(keep), collapse = ", "), ")"))
      t <- system.time(fit <- gpgam(fo, data = d[tr, ], control = ctl))[["elapsed"]]
      pr <- predict(fit, d[te, ], se.fit = TRUE)
      add(variant = v, data = sprintf("%s, gp() of %d inputs", ds, length(keep)), split = k, seconds = t,
          rmse = rmse(pr$fit, d$y[te]), ll = mean(dnorm(d$y[te], pr$fit, sqrt(pr$se.fit^2 + sigma(fit)^2), log = TRUE)),
          cover = NA)
    }
  }
  print(utils::tail(rows, 1))
}
use(default_priors)
agg <- stats::aggregate(cbind(seconds, rmse, ll, cover) ~ data + variant, data = rows, FUN = mean, na.action = na.pass)
agg <- agg[order(agg$data, agg$variant != "default"), ]
fmt <- function(x, f) ifelse(is.na(x), "-", sprintf(f, x))
md <- c("# The lengthscale prior of a gp() term of several inputs: default against a lower tail at range / M",
        "",
        sprintf("`Rscript bench/prior_tails.R`; %s on %s, %d cores, 2 threads; mgcv %s. Means over seeds or splits.",
                format(Sys.time(), "%Y-%m-%d"), R.version$platform, parallel::detectCores(), packageVersion("mgcv")),
        "",
        "| data | lower 1% tail | seconds | RMSE | test log-lik | coverage of f |", "|---|---|---|---|---|---|",
        sprintf("| %s | %s | %.2f | %s | %s | %s |", agg$data, ifelse(agg$variant == "default", "range / M^(1/d)", "range / M"),
                agg$seconds, fmt(agg$rmse, "%.4f"), fmt(agg$ll, "%.4f"), fmt(agg$cover, "%.3f")),
        "", "Per seed or split:", "",
        "| data | variant | seed/split | RMSE | test log-lik |", "|---|---|---|---|---|",
        sprintf("| %s | %s | %d | %.4f | %s |", rows$data, rows$variant, rows$split, rows$rmse, fmt(rows$ll, "%.4f")))
writeLines(md, file.path("bench", "results", "prior_tails.md"))
writeLines(md[1:(8 + nrow(agg))])
