#!/usr/bin/env bash
# Installs, builds and runs every test (unit and end-to-end specs, through ctest).
# End-to-end specs need root and real BPF; as another user they skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --no-tests=error
