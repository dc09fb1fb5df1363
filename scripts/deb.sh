#!/usr/bin/env bash
# Builds the Debian package: a build configured for /usr (the installed
# binary looks for its Lua in /usr/share/moonrover/lua, compiled in) in
# $BUILD_DIR/deb, packaged by CPack. Prints the path of the .deb.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
root=$(pwd)
build_dir=${BUILD_DIR:-build}
case $build_dir in /*) ;; *) build_dir=$root/$build_dir ;; esac
deb_dir=$build_dir/deb
# Only what is installed is built (not the specs' workloads).
cmake -S . -B "$deb_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
cmake --build "$deb_dir" -j"$(nproc)" --target moonrover >/dev/null
(cd "$deb_dir" && cpack -G DEB >/dev/null)
version=$(sed -n 's/^project(moonrover VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=$deb_dir/moonrover_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || { echo "deb: cpack did not write $deb" >&2; exit 1; }
echo "$deb"
