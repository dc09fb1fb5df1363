#!/usr/bin/env bash
# Benchmark: the agent's HTTP endpoint under a slowloris flood. Starts
# `moonrover agent` with an open-files limit of 1024, opens CLIENTS slow
# connections to it (spec/support/slowloris.py: each sends a byte a second,
# never ending its request, and is reopened when closed), then measures,
# while the flood goes on: /healthz latency (50 requests, 100 ms apart), the
# delay from SIGHUP to the agent logging it (5 reloads), the agent's CPU use
# and how much it logged, and how many connections it held.
#   usage: scripts/bench/http_slowloris.sh [CLIENTS] [REQUESTS] [RELOADS]
#   BIN=path/to/moonrover picks another build (to compare with an older one;
#   give it few REQUESTS and RELOADS: each may wait 5 s while it logs ~50 MB/s).
# Needs root and a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

clients=${1:-1100}
requests=${2:-50}
reloads=${3:-5}
bin=${BIN:-build/moonrover}
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
cleanup() {
  [ -n "${flood:-}" ] && kill "$flood" 2>/dev/null
  [ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }

mkdir "$work/scripts"
bash -c 'ulimit -n 1024 && exec "$0" agent --http 127.0.0.1:0 --pid-file "$1" --scripts "$2"' \
  "$bin" "$work/pid" "$work/scripts" 2>"$work/log" &
for _ in $(seq 100); do [ -s "$work/pid" ] && grep -q 'on port' "$work/log" && break; sleep 0.1; done
pid=$(cat "$work/pid")
port=$(grep -o 'on port [0-9]*' "$work/log" | awk '{ print $3 }')

/usr/bin/python3 spec/support/slowloris.py 127.0.0.1 "$port" "$clients" --reopen --interval 1 \
  --status "$work/flood" &
flood=$!
for _ in $(seq 300); do
  [ "$(awk '/^opened/ { print $2 }' "$work/flood" 2>/dev/null || echo 0)" -ge "$clients" ] && break
  sleep 0.1
done
sleep 2

ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
log0=$(stat -c %s "$work/log")
t0=$(ticks)
s0=$(date +%s.%N)
/usr/bin/python3 scripts/bench/http_probe.py "$port" "$pid" "$work/log" "$requests" "$reloads" >"$work/probe"
t1=$(ticks)
s1=$(date +%s.%N)
log1=$(stat -c %s "$work/log")
sockets=$(find "/proc/$pid/fd" -lname 'socket:*' | wc -l)

echo "| measure ($clients slow clients, ulimit -n 1024) | $bin |"
echo "|---|---|"
awk -v n="$requests" -v r="$reloads" '{ v[$1] = $2 } END {
  printf "| /healthz p50 / p95 / max | %s / %s / %s ms (%d of %d failed or over 5 s) |\n", v["healthz_p50_ms"], v["healthz_p95_ms"], v["healthz_max_ms"], v["healthz_failed"], n
  printf "| SIGHUP to its log line, p50 / max | %s / %s ms (%d of %d not seen in 5 s) |\n", v["sighup_p50_ms"], v["sighup_max_ms"], v["sighup_failed"], r }' "$work/probe"
awk -v t="$((t1 - t0))" -v hz="$hz" -v a="$s0" -v b="$s1" \
  'BEGIN { printf "| agent CPU during the probe | %.0f%% of one core |\n", 100 * t / hz / (b - a) }'
awk -v n="$((log1 - log0))" -v a="$s0" -v b="$s1" \
  'BEGIN { printf "| log written during the probe | %.0f bytes (%.0f bytes/s) |\n", n, n / (b - a) }'
echo "| sockets the agent held at the end | $sockets |"
echo "| flood client | $(tr '\n' ' ' <"$work/flood") |"
