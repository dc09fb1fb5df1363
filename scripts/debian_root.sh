#!/usr/bin/env bash
# Makes (or reuses) a fresh Debian root for the package's specs and the image:
# debootstrap's minbase of this host's release, from the Debian mirror apt is
# configured with, plus the runtime dependencies the .deb names and systemd
# (for `systemd-analyze verify` of the unit). Usage: debian_root.sh DEB DIR.
# DIR is kept: a second call with the same release and dependencies reuses it.
set -euo pipefail

deb=$1
dir=$2
. /etc/os-release
suite=$VERSION_CODENAME
# The source of the release whose Release file says Origin: Debian; before
# any `apt-get update` (no Release files yet), the first source of the
# release in apt's configuration.
first_source() {
  apt-get indextargets "$@" --format '$(RELEASE) $(REPO_URI)' 'Created-By: Packages' |
    awk -v s="$suite" '$1 == s { print $2; exit }'
}
mirror=$(first_source 'Origin: Debian')
[ -n "$mirror" ] || mirror=$(first_source --no-release-info)
[ -n "$mirror" ] || { echo "debian_root: no Debian source for $suite in apt's configuration" >&2; exit 1; }
# Depends of the package, names only: "libc6 (>= 2.36), a | b" -> "libc6,a".
depends=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep . | sort |
  paste -sd, -)
packages="$depends,systemd"
stamp="$suite $mirror $packages"
if [ -f "$dir/.moonrover-root" ] && [ "$(cat "$dir/.moonrover-root")" = "$stamp" ]; then
  echo "$dir"
  exit 0
fi
rm -rf "$dir" "$dir.new"
mkdir -p "$(dirname "$dir")"
debootstrap --variant=minbase --include="$packages" "$suite" "$dir.new" "$mirror" >"$dir.log" 2>&1 || {
  echo "debian_root: debootstrap failed, see $dir.log" >&2
  exit 1
}
chroot "$dir.new" apt-get clean
mv "$dir.new" "$dir"
echo "$stamp" >"$dir/.moonrover-root"
echo "$dir"
