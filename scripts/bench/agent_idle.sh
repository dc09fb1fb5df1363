#!/usr/bin/env bash
# Benchmark: the agent at rest. Starts `moonrover agent` with the bundled
# scripts, lets it settle, then measures its RSS and its CPU use over an idle
# window, and the time of RELOADS hot reloads (from the agent's own log).
#   usage: scripts/bench/agent_idle.sh [IDLE_SECONDS] [RELOADS]
# Needs root and a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

idle=${1:-30}
reloads=${2:-10}
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
trap '[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; rm -rf "$work"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x build/moonrover ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }

./build/moonrover agent --http 127.0.0.1:0 --pid-file "$work/pid" 2>"$work/log" &
for _ in $(seq 100); do [ -s "$work/pid" ] && break; sleep 0.1; done
pid=$(cat "$work/pid")
sleep 3

ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
sleep "$idle"
t1=$(ticks)
rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")

for _ in $(seq "$reloads"); do
  kill -HUP "$pid"
  sleep 0.3
done
reload_ms=$(grep -o 'loaded [0-9]* script(s) in [0-9.]* ms' "$work/log" | awk '{ print $5 }' | sort -n)
count=$(echo "$reload_ms" | wc -l)

echo "| measure | moonrover agent (bundled scripts) |"
echo "|---|---|"
echo "| idle RSS | $((rss_kb / 1024)) MiB ($rss_kb KiB) |"
awk -v t="$((t1 - t0))" -v hz="$hz" -v s="$idle" \
  'BEGIN { printf "| idle CPU over %d s | %.3f%% of one core (%d ticks of 1/%d s) |\n", s, 100 * t / hz / s, t, hz }'
echo "| hot reload ($count reloads) | median $(echo "$reload_ms" | sed -n "$(( (count + 1) / 2 ))p") ms, max $(echo "$reload_ms" | tail -1) ms |"
