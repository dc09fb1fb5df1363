#!/usr/bin/env bash
# Benchmark: the whole agent path for events: BPF ring buffer -> data-plane
# thread -> queue -> C batch -> a Lua script's callback (a per-pid count in a
# Lua table) inside `moonrover agent`, with the watchdog armed around each
# call. A getppid() generator on CPU1 makes the events; the agent runs on CPU0,
# started by agent_events.lua (the benchmark's stream is not in the product).
# Prints events/s and the agent's main-thread CPU per million events.
#   usage: scripts/bench/agent_events.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-5}
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
trap '[ -s "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -f build/libmoonrover.so ] && [ -x build/workloads/getppid_loop ] || { echo "bench: build first" >&2; exit 1; }

mkdir "$work/scripts"
cat > "$work/scripts/count_bench.lua" <<'LUA'
require("moonrover.rt").with_test_api() -- the "bench" stream
local agent = require("moonrover.agent")
local per_pid, seen = {}, 0
local gauge = agent.gauge("bench_events_seen", "bench events handled by the script")
agent.on("bench", function(batch)
  local events = batch.events
  for i = 0, batch.n - 1 do
    local pid = events[i].pid
    per_pid[pid] = (per_pid[pid] or 0) + 1
  end
  seen = seen + batch.n
  gauge:set(seen)
end)
LUA

# The generator waits, stopped, until the agent filters on its pid.
sh -c "kill -STOP \$\$; exec taskset -c 1 build/workloads/getppid_loop $seconds" >/dev/null 2>&1 &
gen=$!
MOONROVER_LIB=build/libmoonrover.so taskset -c 0 luajit scripts/bench/agent_events.lua "$gen" \
  --scripts "$work/scripts" --http 127.0.0.1:0 --pid-file "$work/pid" 2>"$work/log" &
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$work/log")
  [ -n "$port" ] && [ -s "$work/pid" ] && break
  sleep 0.1
done
agent=$(cat "$work/pid")
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/$agent/task/$agent/stat"; }

c0=$(cpu_ms)
t0=$(date +%s.%N)
kill -CONT "$gen"
wait "$gen" || true
t1=$(date +%s.%N)
last=-1
for _ in $(seq 50); do
  now=$(metric bench_events_seen)
  [ "$now" = "$last" ] && break
  last=$now
  sleep 0.2
done
c1=$(cpu_ms)
dropped=$(metric 'moonrover_events_dropped_total{stream="bench",reason="queue_full"}')
kernel=$(metric 'moonrover_events_dropped_total{stream="bench",reason="kernel_ring_full"}')
awk -v n="$last" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v dq="$dropped" -v dk="$kernel" 'BEGIN {
  printf "| agent path (Lua script in moonrover agent) | %d events | %.2f M events/s | main thread %d ms CPU | %.1f ms / M events | dropped %d queue, %d kernel |\n",
    n, n / (t1 - t0) / 1e6, c, c / (n / 1e6), dq, dk }'
