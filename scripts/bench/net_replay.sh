#!/usr/bin/env bash
# Benchmark: scripts/bench/net_replay.lua (the agent's Lua per HTTP exchange,
# replayed in memory) several times, optionally alternating with another
# version of the Lua tree, so that both see the same neighbours on a shared
# machine. Prints each run's median and, per version, the median and the
# lowest of the runs' medians (ns of CPU per exchange).
#   usage: scripts/bench/net_replay.sh [--base DIR] [RUNS (5)] [REQUESTS (200000)] [ROUNDS (5)]
# --base DIR: a tree holding another version's lua/ (for instance made with
#   `git archive main lua | tar -x -C DIR`), run before this one in each turn.
# The environment is passed on (UNMEASURED=1, see net_replay.lua). Needs
# scripts/build.sh first (the parser calls the runtime library).
set -euo pipefail
cd "$(dirname "$0")/../.."

base=
if [ "${1:-}" = "--base" ]; then
  base=${2:-}
  shift 2 || true
  [ -f "$base/lua/scripts/network.lua" ] || { echo "net_replay: no lua/ tree in '$base'" >&2; exit 1; }
fi
runs=${1:-5}
requests=${2:-200000}
rounds=${3:-5}
here=$(pwd)
[ -f build/libmoonrover.so ] || { echo "net_replay: run scripts/build.sh first" >&2; exit 1; }
export MOONROVER_LIB="$here/build/libmoonrover.so"
# this build's generated Lua (moonrover.consts), for both trees
export MOONROVER_GENERATED_LUA="$here/build/generated/lua"

# One run in tree $1: its median ns per exchange.
run() {
  (cd "$1" && luajit "$here/scripts/bench/net_replay.lua" "$requests" "$rounds") |
    sed -n 's/^median \([0-9]*\) ns per exchange.*/\1/p'
}

summary() {
  sort -n | awk -v name="$1" '{ v[NR] = $1 } END {
    printf "%s: median %d, lowest %d ns per exchange over %d runs\n", name, v[int((NR + 1) / 2)], v[1], NR }'
}

: >"${TMPDIR:-/tmp}/net_replay.base.$$"
: >"${TMPDIR:-/tmp}/net_replay.this.$$"
trap 'rm -f "${TMPDIR:-/tmp}/net_replay.base.$$" "${TMPDIR:-/tmp}/net_replay.this.$$"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  if [ -n "$base" ]; then
    b=$(run "$base")
    echo "$b" >>"${TMPDIR:-/tmp}/net_replay.base.$$"
    echo "run $i: base $b"
  fi
  t=$(run "$here")
  echo "$t" >>"${TMPDIR:-/tmp}/net_replay.this.$$"
  echo "run $i: this $t"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$base" ] || summary base <"${TMPDIR:-/tmp}/net_replay.base.$$"
summary this <"${TMPDIR:-/tmp}/net_replay.this.$$"
