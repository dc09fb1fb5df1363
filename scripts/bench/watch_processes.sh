#!/usr/bin/env bash
# Benchmark: the cost of watching processes from a script. Starts PROCS
# sleeping processes, then two agents side by side for SECONDS: one whose
# script samples all of them every second with moonrover.processes (and keeps
# a 5-slot window per process, as a policy does), and one idle (no script of
# its own). Both run without the network tracer. Prints each agent's CPU over
# the same window as a share of one core (from /proc/PID/stat, all threads)
# and the script's own time per sample.
#   usage: scripts/bench/watch_processes.sh [SECONDS] [PROCS]
# Needs root and a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-30}
procs=${2:-500}
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
cleanup() {
	for f in "$work"/watch/pid "$work"/idle/pid; do
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	[ -s "$work/sleepers" ] && xargs kill <"$work/sleepers" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x build/moonrover ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }

for _ in $(seq "$procs"); do
	sleep 3600 &
	echo $! >>"$work/sleepers"
done

mkdir -m 755 "$work/watch" "$work/idle" "$work/watch/scripts" "$work/idle/scripts"
{
	echo "local PIDS = { $(paste -sd, "$work/sleepers") }"
	cat <<'LUA'
local agent = require("moonrover.agent")
local processes = require("moonrover.processes")
local windows = require("moonrover.windows")

local sampler = processes.sampler()
local by_pid = {}
local seen = agent.gauge("bench_watch_processes_seen", "processes in the last sample")
local busy = agent.counter("bench_watch_busy_total", "processes 3 of 5 s above 80 % of a core")
local spent = agent.counter("bench_watch_seconds_total", "seconds the sampling callback took")
local ticks = agent.counter("bench_watch_samples_total", "samples taken")

agent.every(1, function()
  local t0 = agent.now()
  local n = 0
  for pid, s in pairs(sampler:sample(PIDS)) do
    n = n + 1
    local w = by_pid[pid] or windows.new(5)
    by_pid[pid] = w
    if s.cpu then
      w:add(t0, s.cpu)
      if w:at_least(3, 5, 0.8, t0) then
        busy:inc()
      end
    end
  end
  seen:set(n)
  spent:add(agent.now() - t0)
  ticks:inc()
end)
LUA
} >"$work/watch/scripts/watch.lua"

for who in watch idle; do
	./build/moonrover agent --network off --http 127.0.0.1:0 --pid-file "$work/$who/pid" \
		--scripts "$work/$who/scripts" 2>"$work/$who/log" &
done
for who in watch idle; do
	for _ in $(seq 100); do [ -s "$work/$who/pid" ] && grep -q "on port" "$work/$who/log" && break; sleep 0.1; done
done
watch=$(cat "$work/watch/pid")
idle=$(cat "$work/idle/pid")
port=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$work/watch/log")
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
sleep 3

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
w0=$(ticks "$watch")
i0=$(ticks "$idle")
s0=$(metric bench_watch_seconds_total)
n0=$(metric bench_watch_samples_total)
sleep "$seconds"
w1=$(ticks "$watch")
i1=$(ticks "$idle")
s1=$(metric bench_watch_seconds_total)
n1=$(metric bench_watch_samples_total)
seen=$(metric bench_watch_processes_seen)

echo "| agent | CPU over $seconds s |"
echo "|---|---|"
awk -v t="$((w1 - w0))" -v hz="$hz" -v s="$seconds" -v n="$seen" \
	'BEGIN { printf "| sampling %d processes every 1 s | %.3f%% of one core (%d ticks of 1/%d s) |\n", n, 100 * t / hz / s, t, hz }'
awk -v t="$((i1 - i0))" -v hz="$hz" -v s="$seconds" \
	'BEGIN { printf "| idle | %.3f%% of one core (%d ticks) |\n", 100 * t / hz / s, t }'
awk -v a="$s0" -v b="$s1" -v c="$n0" -v d="$n1" -v n="$seen" \
	'BEGIN { printf "| the sampling callback | %.2f ms per sample of %d processes (%d samples) |\n", 1000 * (b - a) / (d - c), n, d - c }'
