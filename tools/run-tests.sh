#!/usr/bin/env bash
# Run every test of the package, from the repository root:
#   1. cpp       Catch2 tests of the C++ core          (build/cpp)
#   2. cpp-asan  the same under ASan + UBSan            (build/cpp-asan)
#   3. rcheck    R CMD build + R CMD check --as-cran    (build/rcheck)
#   4. interactive  the package installed as the README installs it
#                (tools/install.sh, with its vignettes), then the README's
#                example and the demo at an interactive R prompt (R under
#                script(1); tools/interactive-check.sh)
# Every stage runs even if an earlier one fails; the last line is
# "N passed, N failed" and the exit status is non-zero if any stage failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
export MAKEFLAGS=-j2

PASSED=0
FAILED=0
FAILED_STAGES=()

banner() { printf '\n==== %s ====\n' "$*"; }

# run_stage NAME FUNCTION: run one stage, record its outcome.
run_stage() {
  local name=$1 fn=$2 rc t0
  banner "stage $name"
  t0=$(date +%s)
  "$fn"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    PASSED=$((PASSED + 1))
    echo "---- stage $name: PASSED ($(( $(date +%s) - t0 )) s)"
  else
    FAILED=$((FAILED + 1))
    FAILED_STAGES+=("$name")
    echo "---- stage $name: FAILED (status $rc, $(( $(date +%s) - t0 )) s)"
  fi
}

eigen_include() {
  Rscript -e 'cat(system.file("include", package = "RcppEigen"))'
}

# cpp_build_and_test BUILD_DIR [CMAKE_ARGS...]
cpp_build_and_test() {
  local dir=$1; shift
  local eigen
  eigen="$(eigen_include)" || return 1
  if [ -z "$eigen" ]; then
    echo "RcppEigen is not installed (no Eigen include dir)"
    return 1
  fi
  cmake -S tests/cpp -B "$dir" -DEIGEN_INCLUDE="$eigen" "$@" || return 1
  cmake --build "$dir" --parallel 2 || return 1
  (cd "$dir" && ctest --output-on-failure)
}

stage_cpp() {
  cpp_build_and_test build/cpp -DSANITIZE=OFF
}

stage_cpp_asan() {
  ASAN_OPTIONS=detect_leaks=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    cpp_build_and_test build/cpp-asan -DSANITIZE=ON
}

stage_rcheck() {
  local dir=build/rcheck rc log tarball f
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  (cd "$dir" && R CMD build "$ROOT") || { echo "R CMD build failed"; return 1; }
  tarball=$(ls "$dir"/scalegp_*.tar.gz 2>/dev/null | head -n 1)
  if [ -z "$tarball" ]; then
    echo "R CMD build produced no scalegp_*.tar.gz"
    return 1
  fi
  (cd "$dir" &&
    _R_CHECK_FORCE_SUGGESTS_=false \
    _R_CHECK_CRAN_INCOMING_=false \
    _R_CHECK_CRAN_INCOMING_REMOTE_=false \
    _R_CHECK_SYSTEM_CLOCK_=false \
    R CMD check --as-cran --no-manual "$(basename "$tarball")")
  rc=$?

  log="$dir/scalegp.Rcheck/00check.log"
  if [ ! -f "$log" ]; then
    echo "no check log at $log"
    return 1
  fi
  if grep -qE '^Status:.*(ERROR|WARNING)|\.\.\. (ERROR|WARNING)$' "$log"; then
    rc=1
  fi
  if [ "$rc" -ne 0 ]; then
    banner "R CMD check problems ($log)"
    # each ERROR/WARNING item with its explanation, then the status line
    awk '/\.\.\. (ERROR|WARNING)$/ { p = 1; print; next }
         /^\* / { p = 0 }
         p || /^Status:/' "$log"
    for f in "$dir"/scalegp.Rcheck/tests/testthat.Rout.fail \
             "$dir"/scalegp.Rcheck/tests/testthat.Rout; do
      if [ -f "$f" ]; then
        banner "tail of $f"
        tail -n 60 "$f"
        break
      fi
    done
    if [ -f "$dir/scalegp.Rcheck/00install.out" ] &&
       grep -q '^\* checking whether package .* can be installed \.\.\. ERROR' "$log"; then
      banner "tail of 00install.out"
      tail -n 40 "$dir/scalegp.Rcheck/00install.out"
    fi
    return 1
  fi
  return 0
}

stage_interactive() {
  local lib=build/lib
  rm -rf "$lib" && mkdir -p "$lib" || return 1
  # the README's install command (tools/install.sh: one compilation, then the
  # vignettes rendered and installed), so the vignettes must be listed
  bash tools/install.sh "$lib" > build/interactive-install.log 2>&1 ||
    { cat build/interactive-install.log; return 1; }
  R_LIBS="$ROOT/$lib" Rscript -e 'v <- vignette(package = "scalegp")$results
    if (!"getting-started" %in% v[, "Item"]) stop("vignette(package = \"scalegp\") does not list getting-started")
    cat("vignettes installed:", v[, "Item"], "\n")' || return 1
  bash tools/interactive-check.sh "$ROOT/$lib"
}

# A notice (not a failure) for each stored replication result older than the
# last commit to the engine it exercises (by the result's name: seed000_* the
# deep GP, seed001_* the EP engine, seed002_* the decoupled engine, seed003_* the qsgp engine, seed004* the variational engine).
stale_results() {
  local f engine paths res_time eng_time
  git rev-parse --git-dir >/dev/null 2>&1 || { echo "(no git history: staleness not checked)"; return 0; }
  for f in inst/replication/results/*.rds; do
    [ -e "$f" ] || continue
    case "$(basename "$f")" in
      seed000_*) engine=dgp; paths="R/dgp.R src/dgp.cpp inst/include/scalegp/dgp.hpp" ;;
      seed001_*) engine=ep; paths="R/engine-ep.R src/ep.cpp inst/include/scalegp/ep.hpp inst/include/scalegp/ep_model.hpp inst/include/scalegp/ep_minibatch.hpp inst/include/scalegp/ep_site.hpp" ;;
      seed002_*) engine=decoupled; paths="R/engine-decoupled.R src/decoupled.cpp inst/include/scalegp/decoupled.hpp inst/include/scalegp/natural_q.hpp inst/include/scalegp/data_pass.hpp" ;;
      seed003_*) engine=qsgp; paths="R/engine-qsgp.R src/qsgp.cpp inst/include/scalegp/qsgp.hpp" ;;
      seed004*) engine=vi; paths="R/engine-vi.R src/svgp.cpp inst/include/scalegp/svgp.hpp inst/include/scalegp/natural_q.hpp inst/include/scalegp/data_pass.hpp inst/include/scalegp/discrete.hpp" ;;
      *) continue ;;
    esac
    res_time=$(git log -1 --format=%ct -- "$f")
    eng_time=$(git log -1 --format=%ct -- $paths)
    if [ -n "$res_time" ] && [ -n "$eng_time" ] && [ "$res_time" -lt "$eng_time" ]; then
      echo "NOTICE: $f (stored $(git log -1 --format=%cs -- "$f")) is older than the last change to the $engine engine ($(git log -1 --format='%cs %h' -- $paths)); rerun its script in inst/replication/"
    fi
  done
}

# The R package is compiled three times in one run (R CMD build installs it to
# render the vignettes, R CMD check installs the tarball, the interactive
# stage installs the tree), from the same sources with the same flags.  When
# ccache is installed (tools/install-deps.sh installs it) and the user has no
# Makevars of their own, the compiler is run through ccache with its cache in
# build/ccache, so the second and third compilations are cache hits.  The
# compiler, flags and objects are unchanged.
setup_ccache() {
  local cxx17
  if ! command -v ccache >/dev/null 2>&1; then
    echo "ccache not found: each stage compiles the package afresh"
    return 0
  fi
  if [ -n "${R_MAKEVARS_USER:-}" ] || [ -f "$HOME/.R/Makevars" ]; then
    echo "a user Makevars is set: ccache not used"
    return 0
  fi
  cxx17=$(R CMD config CXX17) || return 0
  mkdir -p build/ccache || return 0
  printf 'CXX17 = ccache %s\n' "$cxx17" > build/ccache.Makevars
  export R_MAKEVARS_USER="$ROOT/build/ccache.Makevars"
  export CCACHE_DIR="$ROOT/build/ccache"
  # the builds run in different directories (R CMD build and check use
  # temporary copies): leave the working directory out of the hash
  export CCACHE_NOHASHDIR=1
  echo "compiling the R package through ccache (cache in build/ccache)"
}

main() {
  local deps_rc
  banner "stored replication results"
  stale_results
  banner "install dependencies"
  bash tools/install-deps.sh
  deps_rc=$?
  [ "$deps_rc" -eq 0 ] || echo "WARNING: tools/install-deps.sh failed (status $deps_rc)"
  setup_ccache

  run_stage cpp stage_cpp
  run_stage cpp-asan stage_cpp_asan
  run_stage rcheck stage_rcheck
  run_stage interactive stage_interactive

  if [ -n "${CCACHE_DIR:-}" ]; then
    banner "ccache"
    ccache --show-stats 2>/dev/null | grep -iE 'hits|misses' || true
  fi
  echo
  [ "${#FAILED_STAGES[@]}" -eq 0 ] || echo "failed stages: ${FAILED_STAGES[*]}"
  [ "$deps_rc" -eq 0 ] || echo "install-deps failed (status $deps_rc)"
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ] && [ "$deps_rc" -eq 0 ]
}

main
