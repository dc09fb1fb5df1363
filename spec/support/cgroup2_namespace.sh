#!/bin/sh
# cgroup2_namespace.sh - runs a command (a spec file's busted) in a private
# mount namespace with the cgroup v2 hierarchy mounted at /sys/fs/cgroup, as a
# cgroup v2 only host (Debian 12's default) has it, whatever layout this host
# has: the "[cgroup2]" variants of spec/CMakeLists.txt. Processes, /proc and
# the cgroups themselves are this host's; only the mounts differ. Exits 77,
# ctest's skip, saying why when the namespace cannot be made.
if [ "$(id -u)" != 0 ]; then
	echo "skipped: the cgroup2 variant needs root (unshare --mount, mount -t cgroup2)" >&2
	exit 77
fi
if ! unshare --mount --propagation private true; then
	echo "skipped: cannot make a private mount namespace here (unshare --mount failed)" >&2
	exit 77
fi
exec unshare --mount --propagation private sh -c '
	if ! mount -t cgroup2 none /sys/fs/cgroup; then
		echo "skipped: cannot mount cgroup2 at /sys/fs/cgroup in a private mount namespace" >&2
		exit 77
	fi
	exec "$@"' sh "$@"
