# Coverage of predict(interval = "prediction") and of the 95% posterior
# interval of the mean response (interval = "confidence") on data drawn from
# each family with gpgam() defaults: eta = 1 + sin(2 pi x), Gamma shape 5,
# Poisson, negative binomial theta 3 (log link), scaled t on the identity
# link (y = eta + 0.3 t_4); 400 training rows, 2000 new rows drawn from the
# same model; `draws` draws per family (default 5).
#
#   Rscript bench/intervals.R [draws]     (writes bench/results/intervals.md)
suppressMessages(library(scalegp))
args <- commandArgs(TRUE)
draws <- if (length(args)) as.integer(args[1]) else 5L
families <- list(
  "Gamma (log)" = list(fam = Gamma(link = "log"), r = function(eta) rgamma(length(eta), 5, 5 / exp(eta)),
                       mean = exp),
  "poisson" = list(fam = poisson(), r = function(eta) rpois(length(eta), exp(eta)), mean = exp),
  "negative binomial" = list(fam = mgcv::nb(), r = function(eta) rnbinom(length(eta), size = 3, mu = exp(eta)),
                             mean = exp),
  "scaled t" = list(fam = mgcv::scat(), r = function(eta) eta + 0.3 * rt(length(eta), 4), mean = identity))
rows <- NULL
for (nm in names(families)) for (s in seq_len(draws)) {
  fm <- families[[nm]]
  set.seed(s)
  d <- data.frame(x = runif(400))
  d$y <- fm$r(1 + sin(2 * pi * d$x))
  nd <- data.frame(x = runif(2000))
  eta <- 1 + sin(2 * pi * nd$x)
  ynew <- fm$r(eta)
  fit <- gpgam(y ~ gp(x), data = d, family = fm$fam, control = gp_control(verbose = FALSE))
  t0 <- proc.time()[["elapsed"]]
  pint <- predict(fit, nd, type = "response", interval = "prediction")
  sec <- proc.time()[["elapsed"]] - t0
  ci <- predict(fit, nd, type = "response", interval = "confidence")
  mu <- fm$mean(eta)
  rows <- rbind(rows, data.frame(family = nm, draw = s, prediction = mean(ynew >= pint[, "lwr"] & ynew <= pint[, "upr"]),
                                 confidence = mean(mu >= ci[, "lwr"] & mu <= ci[, "upr"]), seconds = sec))
}
print(rows)
agg <- aggregate(cbind(prediction, confidence, seconds) ~ family, rows, mean)
md <- c("# Interval coverage by family (`Rscript bench/intervals.R`)", "",
        sprintf("%s; scalegp %s; %d draws per family; 400 training rows, 2000 new rows; 95%% intervals.",
                format(Sys.Date()), packageVersion("scalegp"), draws), "",
        "`prediction`: share of new observations inside `predict(type = \"response\", interval = \"prediction\")`;",
        "`confidence`: share of new rows whose true mean response is inside `interval = \"confidence\"`;",
        "`seconds`: time of the prediction interval for 2000 rows. Means over the draws (worst draw in brackets).", "",
        "| family | prediction | confidence | seconds |", "|---|---|---|---|",
        sprintf("| %s | %.3f (%.3f) | %.3f (%.3f) | %.2f |", agg$family, agg$prediction,
                tapply(rows$prediction, rows$family, min)[agg$family], agg$confidence,
                tapply(rows$confidence, rows$family, min)[agg$family], agg$seconds))
writeLines(md, file.path("bench", "results", "intervals.md"))
cat(md, sep = "\n")
