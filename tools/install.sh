#!/usr/bin/env bash
# Installs scalegp from this source tree together with its vignettes, so that
# vignette(package = "scalegp") lists them and browseVignettes("scalegp")
# opens them.  R CMD INSTALL of a source tree installs no vignettes (only
# R CMD build renders them, and building then installing the tarball would
# compile the C++ code twice), so this script
#   1. installs the tree with R CMD INSTALL: compiles the C++ code (several
#      minutes; the object files stay in src/, so a later reinstall after
#      changes to R code only is fast);
#   2. renders the vignettes (vignettes/*.Rmd) with the package just
#      installed, in a copy of the tree in build/install/ (the source tree
#      itself is left as it was);
#   3. installs that copy, with the rendered vignettes in inst/doc; it holds
#      the object files of step 1, so nothing is compiled again.
# If step 2 fails (e.g. no pandoc), the package stays installed without
# vignettes and the script says so.  SCALEGP_VIGNETTES=0 skips steps 2 and 3.
# The output of each step goes to build/install.log; its tail is shown when a
# step fails.
#
# Usage, from anywhere:  bash tools/install.sh [LIBRARY]
# (default: R's default library, as R CMD INSTALL).  MAKEFLAGS defaults to -j2.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export MAKEFLAGS="${MAKEFLAGS:--j2}"
LIB_ARGS=()
if [ $# -ge 1 ] && [ -n "$1" ]; then
  mkdir -p "$1"
  LIB="$(cd "$1" && pwd)"
  LIB_ARGS=(--library="$LIB")
  export R_LIBS="$LIB${R_LIBS:+:$R_LIBS}"
fi
mkdir -p build
LOG="$ROOT/build/install.log"
: > "$LOG"
STAGE="$ROOT/build/install/scalegp"

fail() {
  echo "install: $1 failed; the end of $LOG:" >&2
  tail -n 40 "$LOG" >&2
  exit 1
}
elapsed() { echo "$(( $(date +%s) - $1 )) s"; }

t0=$(date +%s)
echo "install: compiling and installing scalegp (several minutes; log in build/install.log)"
R CMD INSTALL --no-test-load "${LIB_ARGS[@]}" . >> "$LOG" 2>&1 || fail "R CMD INSTALL"
echo "install: scalegp installed ($(elapsed "$t0"))"

if [ "${SCALEGP_VIGNETTES:-1}" = "0" ]; then
  echo "install: vignettes skipped (SCALEGP_VIGNETTES=0)"
  exit 0
fi

t1=$(date +%s)
echo "install: rendering the vignettes"
rm -rf "$ROOT/build/install" && mkdir -p "$STAGE"
# the tree with its timestamps (make must see the object files as up to date),
# without build/ and git's files
tar -cf - --exclude=./build --exclude=./.git --exclude=./demo-output . | tar -xpf - -C "$STAGE"
rm -rf "$STAGE/inst/doc"
if ! (cd "$STAGE" && Rscript --vanilla -e '
  suppressMessages(requireNamespace("scalegp"))
  tools::buildVignettes(dir = ".", tangle = TRUE, quiet = TRUE)
  v <- tools::pkgVignettes(dir = ".", output = TRUE, source = TRUE)
  out <- c(v$docs, v$outputs, unlist(v$sources))
  dir.create(file.path("inst", "doc"), recursive = TRUE, showWarnings = FALSE)
  stopifnot(length(v$outputs) == length(v$docs), all(file.copy(out, file.path("inst", "doc"), overwrite = TRUE)))
  cat("install:", length(v$docs), "vignettes rendered:", basename(v$outputs), "\n")
' >> "$LOG" 2>&1); then
  echo "install: WARNING: rendering the vignettes failed (see build/install.log); scalegp is installed without them" >&2
  exit 0
fi
grep "^install:" "$LOG" | tail -n 1 || true
R CMD INSTALL --no-test-load "${LIB_ARGS[@]}" "$STAGE" >> "$LOG" 2>&1 || fail "installing the vignettes"
rm -rf "$ROOT/build/install"
echo "install: vignettes installed ($(elapsed "$t1")): vignette(package = \"scalegp\"), browseVignettes(\"scalegp\")"
