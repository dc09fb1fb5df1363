#!/usr/bin/env bash
# The main job, from a fresh machine: install, build, then profile the whole
# system for 10 seconds into profile.svg (a flame graph) and print the summary.
# Extra arguments go to `moonrover profile` (see `build/moonrover profile --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
exec ./build/moonrover profile --duration 10 --output profile.svg "$@"
