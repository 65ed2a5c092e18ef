#!/usr/bin/env bash
# Installs everything scalegp needs, installs the package with its vignettes
# (tools/install.sh) and runs its demo: a summary on the console and plots in
# ./demo-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
MAKEFLAGS=-j2 bash tools/install.sh
Rscript -e 'demo("scalegp", package = "scalegp", ask = FALSE, echo = FALSE)'
