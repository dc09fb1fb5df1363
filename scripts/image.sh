#!/usr/bin/env bash
# Builds the container image localhost/moonrover:VERSION offline, from Debian
# packages only: the fresh Debian root of scripts/debian_root.sh with the .deb
# of scripts/deb.sh installed (dpkg -i in an overlay of it), packed by tar and
# turned into an image with `podman import`. An image of the same package
# contents on the same root is kept. Prints the image's name.
set -euo pipefail
cd "$(dirname "$0")/.."

root_dir=$(pwd)
build_dir=${BUILD_DIR:-build}
case $build_dir in /*) ;; *) build_dir=$root_dir/$build_dir ;; esac
deb=$(BUILD_DIR=$build_dir bash scripts/deb.sh | tail -n 1)
root=$(bash scripts/debian_root.sh "$deb" "$build_dir/debian-root")
version=$(dpkg-deb -f "$deb" Version)
image=localhost/moonrover:$version
key=$( (dpkg-deb -I "$deb" md5sums && cat "$root/.moonrover-root") | sha256sum | cut -d' ' -f1)
label=org.moonrover.content
if podman image exists "$image" &&
  [ "$(podman image inspect --format "{{index .Config.Labels \"$label\"}}" "$image")" = "$key" ]; then
  echo "$image"
  exit 0
fi

work=$(mktemp -d /tmp/moonrover-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper/tmp" "$work/work" "$work/merged"
cp "$deb" "$work/upper/tmp/moonrover.deb"
# In a private mount namespace: the overlay, dpkg -i in it, then the tree as
# a tar stream (what the Debian root's cache and the package put there).
unshare -m --propagation private sh -eu -c '
  root=$1 work=$2
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$work/merged"
  chroot "$work/merged" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg -i /tmp/moonrover.deb >&2
  rm -f "$work/merged/tmp/moonrover.deb" "$work/merged/.moonrover-root"
  tar -C "$work/merged" --numeric-owner --exclude=./var/lib/apt/lists/* --exclude=./var/cache/apt/* \
    --exclude=./usr/share/man/* -c .
' sh "$root" "$work" |
  podman import --quiet \
    --change 'ENTRYPOINT ["/usr/bin/moonrover"]' \
    --change 'CMD ["agent", "--config", "/etc/moonrover/rover_configs.yaml"]' \
    --change "LABEL $label=$key" \
    --message "moonrover $version from Debian packages" - "$image" >/dev/null
echo "$image"
