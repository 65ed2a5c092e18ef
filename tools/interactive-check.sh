#!/usr/bin/env bash
# Drives a real interactive R session (interactive() is TRUE, so fits show
# their progress bars, as at a user's prompt) through the README's first
# example and the package demo, then interrupts a long fit (SIGINT, as
# Ctrl-C sends) and checks that R carries on; fails on any error.  R is run under
# script(1), which gives it a terminal.  Needs the package installed in the
# library at $1 (default: R's default library).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB="${1:-}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
{
  echo 'options(warn = 1)'
  echo 'if (!interactive()) stop("the session is not interactive")'
  if [ -n "$LIB" ]; then echo ".libPaths(c('$LIB', .libPaths()))"; fi
  echo 'pdf(file.path(tempdir(), "plots.pdf"))'
  # the README's first R code block
  awk '/^```r$/ { on = 1; next } on && /^```$/ { exit } on { print }' "$ROOT/README.md"
  echo 'demo("scalegp", package = "scalegp", ask = FALSE, echo = FALSE)'
  # Ctrl-C during a long fit: SIGINT from outside after 3 s; R must be usable after it
  echo 'big <- data.frame(x = runif(2e5)); big$y <- sin(6 * big$x) + rnorm(2e5)'
  echo 'system(sprintf("sleep 3; kill -INT %d", Sys.getpid()), wait = FALSE)'
  echo 'fit_int <- gpgam(y ~ gp(x, k = 100), data = big, control = gp_control(batch_size = 500, iterations = 1e7, tol = 1e-12, patience = 1e7))'
  echo 'cat("AFTER", "INTERRUPT", exists("fit_int"), "\n")'
  echo 'cat("INTERACTIVE", "SESSION", "DONE\n")'
} > "$WORK/session.R"
cd "$WORK" || exit 1
script -qec "R --interactive --no-save --no-restore --quiet < session.R" /dev/null > session.log 2>&1
status=0
if ! grep -q "INTERACTIVE SESSION DONE" session.log; then
  echo "interactive-check: the session did not reach its end"; status=1
fi
if grep -nE "^Error|Error in |Error: " session.log; then
  echo "interactive-check: errors in the interactive session"; status=1
fi
if ! grep -q "iteration" session.log; then
  echo "interactive-check: no progress bar was shown"; status=1
fi
if ! grep -q "AFTER INTERRUPT FALSE" session.log; then
  echo "interactive-check: an interrupted fit did not return to a usable prompt"; status=1
fi
if [ "$status" -ne 0 ]; then tail -n 80 session.log; fi
[ "$status" -eq 0 ] && echo "interactive-check: README example and demo ran at an interactive prompt without errors"
exit "$status"
