# Large-scale GP classification (seed 001's airline and MNIST figures): test
# error and NLL against training time for minibatch EP, our variational
# engine and a probit glm, on
#   flights   nycflights13::flights (2013, NYC airports): is the arrival delay
#             more than 15 minutes (the FAA's definition of a delayed
#             flight)?  8 inputs as in the paper's airline set: plane age
#             (2013 - year built, from nycflights13::planes; median when
#             unknown), distance, air time, scheduled departure and arrival
#             times (minutes after midnight), day of week, day of month,
#             month.  Cancelled flights (no arrival delay) removed; 10 000
#             rows for testing, the rest for training.
#   ringnorm  mlbench.ringnorm, 20 inputs (class 1 ~ N(0, 4 I), class 2 ~
#             N(a, I)): a non-linear boundary; 1e6 training rows, 10 000 test.
# Each GP method is run with increasing iteration budgets (minibatches of
# 1000, M = 100 inducing points); each budget is a separate fit, its time
# includes the final full-data passes.
#
#   Rscript bench/ep_large.R [data: flights|ringnorm|both] [threads]
#
# Needs the nycflights13 and mlbench packages.
library(scalegp)
args <- commandArgs(trailingOnly = TRUE)
which_data <- if (length(args) >= 1) args[1] else "both"
threads <- if (length(args) >= 2) as.integer(args[2]) else NULL
budgets <- c(200, 1000, 4000)

flights_data <- function() {
  f <- nycflights13::flights
  pl <- nycflights13::planes
  f <- f[!is.na(f$arr_delay) & !is.na(f$air_time), ]
  age <- 2013 - pl$year[match(f$tailnum, pl$tailnum)]
  age[is.na(age)] <- stats::median(age, na.rm = TRUE)
  mins <- function(hhmm) (hhmm %/% 100) * 60 + hhmm %% 100
  date <- as.Date(sprintf("2013-%02d-%02d", f$month, f$day))
  data.frame(age = age, distance = f$distance, air_time = f$air_time, dep = mins(f$sched_dep_time),
             arr = mins(f$sched_arr_time), weekday = as.integer(format(date, "%u")), day = f$day,
             month = f$month, y = as.numeric(f$arr_delay > 15))
}

ringnorm_data <- function(n) {
  r <- mlbench::mlbench.ringnorm(n, d = 20)
  data.frame(r$x, y = as.numeric(r$classes == 2))
}

score <- function(p, y) {
  p <- pmin(pmax(p, 1e-12), 1 - 1e-12)
  c(nll = -mean(ifelse(y == 1, log(p), log1p(-p))), error = mean((p > 0.5) != (y == 1)))
}

run <- function(name, d, test) {
  tr <- d[-test, ]
  te <- d[test, ]
  inputs <- setdiff(names(d), "y")
  fo_gp <- stats::as.formula(paste("y ~ gp(", paste(inputs, collapse = ", "), ")"))
  fo_lin <- stats::as.formula(paste("y ~", paste(inputs, collapse = " + ")))
  out <- NULL
  t0 <- proc.time()[["elapsed"]]
  g <- stats::glm(fo_lin, data = tr, family = stats::binomial("probit"))
  out <- rbind(out, data.frame(data = name, method = "glm (probit, linear)", iterations = NA,
                               time = proc.time()[["elapsed"]] - t0,
                               t(score(stats::predict(g, te, type = "response"), te$y))))
  for (b in budgets) for (meth in c("ep", "ep_tied", "vi")) {
    ctl <- gp_control(inducing = 100, batch_size = 1000, iterations = b, seed = 1, threads = threads,
                      verbose = FALSE, priors = FALSE)
    if (meth != "vi") {  # (the protocol of the stored runs: inducing inputs learned)
      ctl$sites <- if (meth == "ep_tied") "tied" else "separate"
      ctl$learn_inducing <- TRUE
    }
    t0 <- proc.time()[["elapsed"]]
    f <- gpgam(fo_gp, data = tr, family = stats::binomial("probit"), inference = sub("_tied", "", meth),
               control = ctl)
    time <- proc.time()[["elapsed"]] - t0
    out <- rbind(out, data.frame(data = name, method = c(ep = "EP, minibatch", ep_tied = "EP, minibatch, tied sites",
                                                         vi = "VI, minibatch")[[meth]],
                                 iterations = b, time = time, t(score(predict(f, te, type = "response"), te$y))))
    print(utils::tail(out, 1), row.names = FALSE)
  }
  out
}

res <- NULL
if (which_data %in% c("flights", "both")) {
  d <- flights_data()
  set.seed(1)
  res <- rbind(res, run(sprintf("flights (n = %d, delayed %.1f%%)", nrow(d) - 10000, 100 * mean(d$y)), d,
                        sample(nrow(d), 10000)))
}
if (which_data %in% c("ringnorm", "both")) {
  set.seed(2)
  d <- ringnorm_data(1e6 + 10000)
  res <- rbind(res, run("ringnorm (n = 1e6, d = 20)", d, seq_len(10000)))
}
source(file.path("inst", "replication", "stamp.R"))
res <- cbind(res, stamp(), stringsAsFactors = FALSE)  # version, commit and date of the run
dir.create(file.path("bench", "results"), showWarnings = FALSE)
saveRDS(res, file.path("bench", "results", paste0("ep_large_", which_data, ".rds")))
# the vignette "Scalable EP classification" shows the full run
if (which_data == "both") saveRDS(res, file.path("inst", "replication", "results", "seed001_large.rds"))
md <- c(sprintf("# Large-scale GP classification (`Rscript bench/ep_large.R %s`), %s", which_data,
                format(Sys.time(), "%Y-%m-%d")), "",
        "| data | method | iterations | time (s) | test NLL | test error |", "|---|---|---|---|---|---|",
        sprintf("| %s | %s | %s | %.1f | %.4f | %.4f |", res$data, res$method,
                ifelse(is.na(res$iterations), "-", res$iterations), res$time, res$nll, res$error))
writeLines(md, file.path("bench", "results", paste0("ep_large_", which_data, ".md")))
cat(md, sep = "\n")
