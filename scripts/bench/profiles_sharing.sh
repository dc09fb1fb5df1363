#!/usr/bin/env bash
# Benchmark: profiles of moonrover.profiles that share one BPF profiler
# against the same profiles on a profiler each (scripts/bench/profiles_sharing.lua).
# Turns kernel.bpf_stats_enabled on for the run (the BPF programs' run time)
# and puts it back as it was. Needs root and a built tree (scripts/build.sh).
#   usage: scripts/bench/profiles_sharing.sh [SECONDS] [ROUNDS] [PROFILES]
set -euo pipefail
cd "$(dirname "$0")/../.."

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -f build/libmoonrover.so ] && [ -x build/workloads/duty_cycle ] \
  || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }

stats_before=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$stats_before"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
MOONROVER_LIB=build/libmoonrover.so MOONROVER_WORKLOADS=build/workloads \
  luajit scripts/bench/profiles_sharing.lua "$@"
