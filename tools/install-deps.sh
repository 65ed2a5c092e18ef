#!/usr/bin/env bash
# Install everything the build and the tests need (idempotent; reruns are fast).
#  - root on Debian: Debian's prebuilt r-cran-* packages plus cmake, catch2,
#    pandoc, qpdf and ccache (tools/run-tests.sh compiles through it) via
#    apt-get (skipped when all are already installed);
#  - otherwise: the R packages from CRAN; the system tools must come from the
#    system's package manager.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

APT_PKGS=(
  r-cran-rcpp r-cran-rcppeigen r-cran-rcppparallel r-cran-cli r-cran-knitr
  r-cran-rmarkdown r-cran-mlbench r-cran-roxygen2 r-cran-mgcv r-cran-mass
  r-cran-testthat r-cran-kernlab catch2 cmake pandoc qpdf ccache
)
R_PKGS=(
  Rcpp RcppEigen RcppParallel cli knitr rmarkdown mlbench roxygen2 mgcv MASS
  testthat kernlab
)

apt_missing() {
  local p
  for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
      || printf '%s\n' "$p"
  done
}

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 \
   && command -v dpkg-query >/dev/null 2>&1; then
  mapfile -t missing < <(apt_missing)
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all Debian packages already installed"
    exit 0
  fi
  echo "install-deps: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
else
  echo "install-deps: not root on Debian; installing missing R packages from CRAN"
  Rscript --vanilla - "${R_PKGS[@]}" <<'REOF'
pkgs <- commandArgs(trailingOnly = TRUE)
missing <- pkgs[!vapply(pkgs, requireNamespace, logical(1), quietly = TRUE)]
if (length(missing) == 0L) {
  cat("install-deps: all R packages already installed\n")
} else {
  lib <- .libPaths()[1L]
  if (file.access(lib, 2L) != 0L) {
    # no writable library: fall back to (and create) the user library
    lib <- path.expand(Sys.getenv("R_LIBS_USER"))
    dir.create(lib, recursive = TRUE, showWarnings = FALSE)
    .libPaths(c(lib, .libPaths()))
  }
  cat("install-deps: installing", missing, "into", lib, "\n")
  install.packages(missing, lib = lib, repos = "https://cloud.r-project.org",
                   quiet = TRUE)
  still <- missing[!vapply(missing, requireNamespace, logical(1), quietly = TRUE)]
  if (length(still)) stop("install-deps: failed to install: ", paste(still, collapse = ", "))
}
REOF
  for tool in cmake pandoc qpdf; do
    command -v "$tool" >/dev/null 2>&1 \
      || echo "install-deps: NOTE: '$tool' not found; install it with the system package manager"
  done
  [ -f /usr/include/catch2/catch.hpp ] || [ -f /usr/local/include/catch2/catch.hpp ] \
    || echo "install-deps: NOTE: Catch2 v2 (catch2/catch.hpp) not found; install it with the system package manager"
fi
