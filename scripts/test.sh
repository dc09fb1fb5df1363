#!/usr/bin/env bash
# Installs, builds, checks formatting and lint (scripts/check_style.sh) and
# runs every spec through ctest: unit, integration, then end to end. End-to-end
# specs need root and real BPF; as another user they skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
bash scripts/check_style.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --no-tests=error
