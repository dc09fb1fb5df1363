#!/bin/sh
# debian_chroot.sh - runs a command in a throwaway copy of a Debian root, with
# a file put at /tmp in it (the .deb under test): an overlay over ROOT in a
# private mount namespace, with /proc, /sys and /dev mounted, so that nothing
# of it outlives the command and ROOT stays as debootstrap left it. The
# command gets a clean environment (none of the specs' MOONROVER_* variables).
# Usage: debian_chroot.sh ROOT FILE COMMAND [ARG...]
set -eu
root=$1
file=$2
shift 2
work=$(mktemp -d /tmp/moonrover-chroot.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper/tmp" "$work/work" "$work/merged"
cp "$file" "$work/upper/tmp/"
unshare -m --propagation private sh -eu -c '
  root=$1 work=$2
  shift 2
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$work/merged"
  mount -t proc proc "$work/merged/proc"
  mount --rbind /sys "$work/merged/sys"
  mount --rbind /dev "$work/merged/dev"
  exec chroot "$work/merged" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"
' sh "$root" "$work" "$@"
