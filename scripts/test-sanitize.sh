#!/usr/bin/env bash
# Runs the unit and integration specs against a build instrumented with
# AddressSanitizer (leaks included) and UndefinedBehaviorSanitizer: installs
# what is missing (scripts/setup.sh), configures and builds with
# -DMOONROVER_SANITIZE=ON into build-sanitize/ (SANITIZE_BUILD_DIR and
# BUILD_TYPE override it and RelWithDebInfo), then runs ctest there. Any
# sanitizer report fails the spec that caused it and is printed in its output;
# copies stay in sanitizer-reports/ of that build directory. How luajit gets
# the ASan runtime: spec/CMakeLists.txt and scripts/cmake/sanitize_luajit.sh.in.
#
# The e2e specs are not run here: they need root and real BPF, and some of them
# measure the machine, which ASan slows down. As root, run them by hand in the
# same build: cd build-sanitize && ctest -L e2e --output-on-failure
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
build_dir=${SANITIZE_BUILD_DIR:-build-sanitize}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DMOONROVER_SANITIZE=ON >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
rm -f "$build_dir"/sanitizer-reports/*
cd "$build_dir"
ctest -L 'unit|integration' --output-on-failure --no-tests=error
