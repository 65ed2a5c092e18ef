# The progress bar of a fit at an interactive prompt (verbose = TRUE).

test_that("the progress bar ends on the objective that print() and logLik() report, beside the log prior", {
  set.seed(1)
  d <- data.frame(x = runif(300))
  d$y <- sin(6 * d$x) + rnorm(300, sd = 0.3)
  out <- capture.output(fit <- gpgam(y ~ gp(x), data = d, control = gp_control(verbose = TRUE, seed = 1)))
  expect_true(fit$log_prior != 0)
  # the bar: the ELBO plus the log prior, labelled so
  expect_match(paste(out, collapse = "\n"), "iteration 1 (at most 2000) | ELBO + log prior", fixed = TRUE)
  # the final line: the ELBO as print() shows it, the log prior and their sum (what the bar showed)
  last <- sub(".*\r", "", out[length(out)])
  expect_match(last, paste0("^Done: ", fit$iterations, " iterations, "))
  expect_match(last, paste0("| ELBO ", format(fit$objective, digits = 7), " (+ log prior ",
                            format(fit$log_prior, digits = 5), " = ",
                            format(fit$objective + fit$log_prior, digits = 7), ")"), fixed = TRUE)
  expect_match(paste(capture.output(print(fit)), collapse = "\n"),
               paste0("ELBO: ", format(fit$objective, digits = 7)), fixed = TRUE)
  expect_equal(as.numeric(logLik(fit)), fit$objective)
})

test_that("the progress bar writes no terminal escape codes and is erased after an error", {
  ctl <- list(verbose = TRUE, priors = TRUE, iterations = 100L)
  ok <- function() {
    m <- scalegp:::progress_monitor(ctl, "ELBO", shift = 2)
    m(1, -8)
    m(10, -5)
    list(objective = -3, log_prior = -2, iterations = 10L)  # an engine's raw result (before the shift)
  }
  out <- paste(capture.output(invisible(ok())), collapse = "\n")
  expect_false(grepl("\033", out, fixed = TRUE))
  expect_match(out, "iteration 1 (at most 100) | ELBO + log prior -10 |", fixed = TRUE)  # obj - shift
  expect_match(out, "Done: 10 iterations, [0-9.]+s \\| ELBO -5 \\(\\+ log prior -2 = -7\\)$")
  failing <- function() {
    m <- scalegp:::progress_monitor(ctl, "ELBO")
    m(1, -8)
    stop("interrupted")
  }
  out <- capture.output(expect_error(failing(), "interrupted"))
  expect_false(any(grepl("Done|\033", out)))
  expect_match(out[length(out)], "\r *\r$")  # the bar overwritten by blanks
  # without priors the final line names the objective alone
  ctl$priors <- FALSE
  out <- paste(capture.output(invisible(ok())), collapse = "\n")
  expect_match(out, "Done: 10 iterations, [0-9.]+s \\| ELBO -5 *$")
  expect_false(grepl("log prior", out))
})

test_that("a qsgp fit's progress bar ends on a final line, as the other engines' do", {
  set.seed(2)
  d <- data.frame(x = runif(300))
  d$y <- sin(6 * d$x) + rnorm(300, sd = 0.3)
  out <- capture.output(fit <- suppressMessages(gpgam(y ~ gp(x), data = d, inference = "qsgp",
                                     control = gp_control(verbose = TRUE, seed = 1, iterations = 30))))
  last <- sub(".*\r", "", out[length(out)])
  expect_match(last, paste0("^Done: 30 iterations, .*\\| ELBO ", format(fit$objective, digits = 7), " *$"))
})
