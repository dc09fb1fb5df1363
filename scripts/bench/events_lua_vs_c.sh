#!/usr/bin/env bash
# Benchmark: the event path from BPF to the consumer, Lua (FFI over the bound
# queue storage) against a C-only drain, side by side in one run. The
# generator runs on CPU1, the consumer on CPU0; then the same load through
# the real agent (scripts/bench/agent_events.sh). Needs root and a built tree.
#   usage: scripts/bench/events_lua_vs_c.sh [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -f build/libmoonrover.so ] && [ -x build/workloads/getppid_loop ] \
  || { echo "bench: build first (cmake -S . -B build && cmake --build build)" >&2; exit 1; }

MOONROVER_LIB=build/libmoonrover.so MOONROVER_WORKLOADS=build/workloads \
  taskset -c 0 luajit scripts/bench/events_lua_vs_c.lua "$@"
echo
echo "The same generator through the whole agent (a Lua script's callback in moonrover agent):"
bash scripts/bench/agent_events.sh "${1:-5}"
