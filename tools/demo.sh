#!/usr/bin/env bash
# Installs everything scalegp needs, installs the package and runs its demo:
# a summary on the console and plots in ./demo-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
MAKEFLAGS=-j2 R CMD INSTALL --no-test-load . >/dev/null
Rscript -e 'demo("scalegp", package = "scalegp", ask = FALSE, echo = FALSE)'
