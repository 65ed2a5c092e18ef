#!/usr/bin/env bash
# Drives a real interactive R session (interactive() is TRUE, so fits show
# their progress bars, as at a user's prompt) through the README's first
# example and the package demo and fails on any error.  A second session
# starts a long fit, and once its progress bar is up the script sends R a
# SIGINT (what Ctrl-C sends); R must abandon the fit and carry on.  R runs
# under script(1), which gives it a terminal; every session is bounded by
# timeout(1), so a hang fails the check instead of stalling CI.  Needs the
# package installed in the library at $1 (default: R's default library).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB="${1:-}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

preamble() {
  echo 'options(warn = 1)'
  echo 'if (!interactive()) stop("the session is not interactive")'
  if [ -n "$LIB" ]; then echo ".libPaths(c('$LIB', .libPaths()))"; fi
}

# run_session FILE LOG SECONDS: R at an interactive prompt, input from FILE
run_session() {
  timeout --kill-after=10 "$3" \
    script -qec "R --interactive --no-save --no-restore --quiet < $1" /dev/null > "$2" 2>&1
}

status=0

# 1. the README's first R code block and the demo
{
  preamble
  echo 'pdf(file.path(tempdir(), "plots.pdf"))'
  awk '/^```r$/ { on = 1; next } on && /^```$/ { exit } on { print }' "$ROOT/README.md"
  echo 'demo("scalegp", package = "scalegp", ask = FALSE, echo = FALSE)'
  echo 'cat("INTERACTIVE", "SESSION", "DONE\n")'
} > session.R
run_session session.R session.log 1200
rc=$?
[ "$rc" -eq 124 ] && { echo "interactive-check: the README/demo session timed out"; status=1; }
if ! grep -q "INTERACTIVE SESSION DONE" session.log; then
  echo "interactive-check: the README/demo session did not reach its end"; status=1
fi
if grep -naE "^Error|Error in |Error: " session.log; then
  echo "interactive-check: errors in the interactive session"; status=1
fi
if ! grep -qa "iteration" session.log; then
  echo "interactive-check: no progress bar was shown"; status=1
fi
[ "$status" -ne 0 ] && tail -n 80 session.log

# 2. Ctrl-C during a long fit (20000 minibatch iterations, minutes of work)
{
  preamble
  echo 'library(scalegp)'
  echo 'set.seed(1); big <- data.frame(x = runif(2e5)); big$y <- sin(6 * big$x) + rnorm(2e5)'
  echo 'writeLines(as.character(Sys.getpid()), "r.pid")'
  echo 'fit_int <- gpgam(y ~ gp(x, k = 100), data = big, control = gp_control(batch_size = 500, iterations = 20000, tol = 1e-12, patience = 20000))'
  echo 'cat("AFTER", "INTERRUPT", exists("fit_int"), "\n")'
  echo 'cat("INTERRUPT", "SESSION", "DONE\n")'
} > interrupt.R
run_session interrupt.R interrupt.log 300 &
session=$!
sent=0
for _ in $(seq 1 240); do
  # the bar of the fit is up once an iteration past the first is printed
  if [ -s r.pid ] && tr '\r' '\n' < interrupt.log | grep -qaE '^.{0,4}iteration [0-9]{2,} \(at most 20000\)'; then
    kill -INT "$(cat r.pid)" && sent=1
    break
  fi
  sleep 1
done
wait "$session"
if [ "$sent" -ne 1 ]; then
  echo "interactive-check: the long fit never showed its progress bar, no interrupt sent"; status=1
elif ! grep -qa "AFTER INTERRUPT FALSE" interrupt.log || ! grep -qa "INTERRUPT SESSION DONE" interrupt.log; then
  echo "interactive-check: an interrupted fit did not return to a usable prompt"; status=1
  tail -c 3000 interrupt.log | tr '\r' '\n' | tail -n 30
fi

[ "$status" -eq 0 ] && echo "interactive-check: README example and demo ran at an interactive prompt without errors; Ctrl-C stopped a long fit and R carried on"
exit "$status"
