#!/usr/bin/env bash
# Installs what moonrover needs (scripts/setup.sh) and builds it into build/.
# BUILD_DIR and BUILD_TYPE override the defaults (build, RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
