#!/usr/bin/env bash
# Benchmark: the agent at rest, and how its memory follows a load. Starts
# `moonrover agent` with the bundled scripts, lets it settle, then measures
# its RSS and its CPU use over an idle window, and the time of RELOADS hot
# reloads (from the agent's own log); then the same without the network
# tracer (--network off), for its RSS and CPU. With LOAD seconds, the agent
# with the tracer on also meets a load: Debian's nginx (`return 200 "ok"`,
# its own configuration in a temporary directory, on a free port) under
# `wrk -t1 -c16` for LOAD s; its RSS is sampled every half second during it
# (the peak), and read again 5 s after, with the records the tracer lost.
#   usage: scripts/bench/agent_idle.sh [IDLE_SECONDS (30)] [RELOADS (10)] [LOAD (0)]
# Needs root and a built tree (scripts/build.sh); wrk and nginx for LOAD.
set -euo pipefail
cd "$(dirname "$0")/../.."

idle=${1:-30}
reloads=${2:-10}
load=${3:-0}
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
chmod 755 "$work" # nginx's worker reads its page as another user
pid=
nginx_pid=
stop() {
  if [ -n "$pid" ]; then
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  pid=
}
cleanup() {
  stop
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x build/moonrover ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }
if [ "$load" -gt 0 ]; then
  for need in nginx wrk curl; do
    command -v "$need" >/dev/null || { echo "bench: $need is missing (apt-get install $need)" >&2; exit 1; }
  done
fi

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)

# Starts the agent with the extra arguments given; sets pid and agent_port.
start() {
  rm -f "$work/pid"
  ./build/moonrover agent --http 127.0.0.1:0 --pid-file "$work/pid" "$@" 2>"$work/log" &
  for _ in $(seq 100); do [ -s "$work/pid" ] && break; sleep 0.1; done
  pid=$(cat "$work/pid")
  sleep 3
  agent_port=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$work/log" | head -1)
}

# RSS (KiB) and CPU (ticks) over the idle window: sets idle_rss and idle_ticks.
measure_idle() {
  local t0
  t0=$(ticks)
  sleep "$idle"
  idle_ticks=$(($(ticks) - t0))
  idle_rss=$(rss_kb)
}

start_nginx() {
  local dir=$work/nginx p
  mkdir -p "$dir/tmp"
  for p in $(shuf -i 20000-60000 -n 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { nginx_port=$p; break; }
  done
  cat >"$dir/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  server {
    listen 127.0.0.1:$nginx_port;
    location / { return 200 "ok"; }
  }
}
EOF
  nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" &
  nginx_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$nginx_port/" >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "bench: nginx does not answer: $(tail -1 "$dir/error.log")" >&2
  exit 1
}

# The agent's nonzero series of records lost, from its /metrics.
losses() {
  curl -s "http://127.0.0.1:$agent_port/metrics" |
    awk '/^moonrover_(net_records_lost_total|events_dropped_total)/ && $NF != 0 { printf "%s%s", s, $0; s = ", " }
      END { if (!s) printf "none" }'
}

# wrk for LOAD s while sampling RSS: sets load_peak, load_after, load_rps, load_lost.
measure_load() {
  local peak=0 r
  wrk -t1 -c16 -d"${load}s" "http://127.0.0.1:$nginx_port/" >"$work/wrk.log" 2>&1 &
  local wrk_pid=$!
  while kill -0 "$wrk_pid" 2>/dev/null; do
    r=$(rss_kb)
    [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.5
  done
  wait "$wrk_pid" || { echo "bench: wrk failed: $(tail -1 "$work/wrk.log")" >&2; exit 1; }
  load_peak=$peak
  load_rps=$(awk '/^Requests\/sec:/ { print $2 }' "$work/wrk.log")
  sleep 5
  load_after=$(rss_kb)
  load_lost=$(losses)
}

mib() { echo "$(($1 / 1024)) MiB ($1 KiB)"; }
cpu() { awk -v t="$1" -v hz="$hz" -v s="$idle" 'BEGIN { printf "%.3f%% of one core (%d ticks of 1/%d s)", 100 * t / hz / s, t, hz }'; }

start
measure_idle
on_rss=$idle_rss on_ticks=$idle_ticks
for _ in $(seq "$reloads"); do
  kill -HUP "$pid"
  sleep 0.3
done
sleep 1 # the last reload's line
reload_ms=$(grep -o 'loaded [0-9]* script(s) in [0-9.]* ms' "$work/log" | awk '{ print $5 }' | sort -n) || true
count=$(echo "$reload_ms" | wc -l)
if [ "$load" -gt 0 ]; then
  start_nginx
  measure_load
fi
stop
start --network off
measure_idle
stop

echo "| measure | moonrover agent (bundled scripts), network tracer on | --network off |"
echo "|---|---|---|"
echo "| idle RSS | $(mib "$on_rss") | $(mib "$idle_rss") |"
echo "| idle CPU over $idle s | $(cpu "$on_ticks") | $(cpu "$idle_ticks") |"
echo "| hot reload ($count reloads) | median $(echo "$reload_ms" | sed -n "$(((count + 1) / 2))p") ms, max $(echo "$reload_ms" | tail -1) ms | |"
if [ "$load" -gt 0 ]; then
  echo "| RSS under wrk -t1 -c16 for $load s ($load_rps req/s), peak | $(mib "$load_peak") | |"
  echo "| RSS 5 s after the load | $(mib "$load_after") | |"
  echo "| records lost during the load | $load_lost | |"
fi
