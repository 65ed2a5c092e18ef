# Replication of seed 004 (Adam, Durrande & John 2018), section 7: the
# Friedman-type function with a centred (ANOVA) additive GP, and the paper's
# motivation, coupled versus mean-field posteriors.
#
#   Rscript inst/replication/seed004_friedman.R [draws]      (default 5 draws)
#
# Writes inst/replication/results/seed004.rds, read by the vignette
# "Additive GPs with a coupled posterior (seed 004)".
suppressMessages(library(scalegp))
source(file.path("inst", "replication", "stamp.R"))  # stamp()
args <- commandArgs(TRUE)
draws <- if (length(args)) as.integer(args[1]) else 5L
out <- file.path("inst", "replication", "results", "seed004.rds")

# analytic ANOVA decomposition under U[0,1]^6 (notes 004, section 5)
cin_term <- 5.24663  # 10 E sin(pi x1 x2)
f1 <- function(x) ifelse(x == 0, 0, 10 * (1 - cos(pi * x)) / (pi * x)) - cin_term
f3 <- function(x) 20 * (x - 0.5)^2 - 5 / 3
f4 <- function(x) 10 * x - 5
f5 <- function(x) 5 * x - 2.5
f12 <- function(x1, x2) 10 * sin(pi * x1 * x2) - f1(x1) - f1(x2) - cin_term
analytic <- list(`gp(x1)` = f1, `gp(x2)` = f1, `gp(x3)` = f3, `gp(x4)` = f4, `gp(x5)` = f5,
                 `gp(x6)` = function(x) 0 * x)
V <- c(`gp(x1)` = 4.7012, `gp(x2)` = 4.7012, `gp(x3)` = 2.2222, `gp(x4)` = 8.3333, `gp(x5)` = 2.0833,
       `gp(x6)` = 0, `gp(x1, x2)` = 1.7852)

simulate <- function(n) {
  d <- as.data.frame(matrix(runif(6 * n), n, dimnames = list(NULL, paste0("x", 1:6))))
  d$y <- 10 * sin(pi * d$x1 * d$x2) + 20 * (d$x3 - 0.5)^2 + 10 * d$x4 + 5 * d$x5 + rnorm(n)
  d
}
z16 <- seq(0, 1, length.out = 16)      # 16 regularly spaced inducing points per 1-D term
grid44 <- as.matrix(expand.grid(seq(0, 1, length.out = 4), seq(0, 1, length.out = 4)))
# the paper's squared exponential kernels (gp()'s default is Matern 5/2)
form <- y ~ gp(x1, inducing = z16, kernel = "se") + gp(x2, inducing = z16, kernel = "se") +
  gp(x3, inducing = z16, kernel = "se") + gp(x4, inducing = z16, kernel = "se") +
  gp(x5, inducing = z16, kernel = "se") + gp(x6, inducing = z16, kernel = "se") +
  gp(x1, x2, inducing = grid44, kernel = "se")

fit_one <- function(d, posterior = "coupled", rank = NULL, seed = 1) {
  gpgam(form, data = d, control = gp_control(fixed = "inducing", posterior = posterior, rank = rank,
                                              seed = seed, verbose = FALSE, optimizer = "adam", priors = FALSE))
}

# component estimates on a grid, and their 95% band coverage of the analytic curves
grid <- seq(0.01, 0.99, length.out = 99)
components <- function(fit) {
  nd <- data.frame(x1 = grid, x2 = grid, x3 = grid, x4 = grid, x5 = grid, x6 = grid)
  p <- predict(fit, nd, type = "terms", se.fit = TRUE)
  g2 <- expand.grid(x1 = seq(0.05, 0.95, length.out = 19), x2 = seq(0.05, 0.95, length.out = 19))
  nd2 <- data.frame(g2, x3 = 0.5, x4 = 0.5, x5 = 0.5, x6 = 0.5)
  p2 <- predict(fit, nd2, type = "terms", se.fit = TRUE)
  list(main = p, inter = p2, grid2 = g2)
}
coverage <- function(cm) {
  cov_main <- vapply(names(analytic), function(t) {
    truth <- analytic[[t]](grid)
    mean(abs(cm$main$fit[, t] - truth) <= 1.96 * cm$main$se.fit[, t])
  }, 0)
  truth12 <- f12(cm$grid2$x1, cm$grid2$x2)
  c(cov_main, `gp(x1, x2)` = mean(abs(cm$inter$fit[, "gp(x1, x2)"] - truth12) <= 1.96 * cm$inter$se.fit[, "gp(x1, x2)"]))
}

set.seed(2018)
d <- simulate(5000)
t_main <- system.time(fit <- fit_one(d))[["elapsed"]]
cm <- components(fit)
av <- anova(fit)
sobol <- data.frame(term = names(V), analytic = unname(V / sum(V)),
                    estimated = av$share[match(names(V), av$term)], edf = av$edf[match(names(V), av$term)])
fit_rank <- fit_one(d, rank = 16)  # the paper's R = M
fit_mf <- fit_one(d, posterior = "meanfield")

# repeated draws: coverage of the component bands, coupled vs mean field
rep_rows <- NULL
for (r in seq_len(draws)) {
  set.seed(3000 + r)
  dr <- simulate(5000)
  for (post in c("coupled", "meanfield")) {
    fr <- fit_one(dr, posterior = post, seed = r)
    rep_rows <- rbind(rep_rows, data.frame(draw = r, posterior = post, elbo = fr$elbo, t(coverage(components(fr))),
                                           check.names = FALSE))
  }
  cat("draw", r, "done\n")
}
res <- list(
  fit_summary = list(elbo = fit$elbo, sigma = sigma(fit), seconds = t_main, iterations = fit$iterations,
                     converged = fit$converged),
  params = fit$params, components = cm, sobol = sobol,
  elbo = data.frame(posterior = c("coupled (full rank)", "coupled, rank R = M = 16 (paper)", "mean field"),
                    elbo = c(fit$elbo, fit_rank$elbo, fit_mf$elbo),
                    total_edf = c(sum(component_edf_sum <- vapply(fit$params$gp, `[[`, 1, "edf")),
                                  sum(vapply(fit_rank$params$gp, `[[`, 1, "edf")),
                                  sum(vapply(fit_mf$params$gp, `[[`, 1, "edf"))),
                    rank_loss = c(0, fit_rank$rank_loss, NA)),
  repeated = rep_rows, draws = draws, date = Sys.Date(), version = stamp()$version, commit = stamp()$commit,
  command = sprintf("Rscript inst/replication/seed004_friedman.R %d", draws))
saveRDS(res, out)
print(res$sobol)
print(res$elbo)
print(aggregate(. ~ posterior, data = rep_rows[, -1], FUN = mean))
