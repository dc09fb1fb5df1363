#!/usr/bin/env bash
# Benchmark: does moonrover see what perf sees on real programs? For three
# workloads - Debian's python3 running a pure-Python loop, nginx (one worker)
# serving a small static file under wrk, redis-server under redis-benchmark -
# it profiles the same process(es) at the same time, for the same duration and
# frequency, with `moonrover profile -p` and `perf record -g -p` (folded with
# perf's stackcollapse.py), and prints per workload, as Markdown, what
# scripts/bench/compare_folded.lua reports: samples, unsymbolized and kernel
# shares, the top 15 functions by self share side by side, their agreement.
# The servers run from a temporary directory on free ports, never as the
# system services. Needs root and a built tree (scripts/build.sh).
# CALL_GRAPH=dwarf instead records perf with --call-graph dwarf (user stacks
# copied and unwound by perf from .eh_frame) and compares whole caller chains
# with scripts/bench/compare_chains.lua: the check of moonrover's CFI unwinding.
# UNWIND=fp|cfi is passed to moonrover as --unwind (default: its own, cfi).
#   usage: [CALL_GRAPH=dwarf] [UNWIND=fp] scripts/bench/compare_with_perf.sh [SECONDS] [KEEP_DIR]
# KEEP_DIR, if given, receives each workload's perf.data, folded files and logs.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-15}
keep=${2:-}
hz=99
call_graph=${CALL_GRAPH:-fp}
bin=./build/moonrover
python=/usr/bin/python3
collapse=/usr/lib/perf-core/scripts/python/stackcollapse.py

die() {
  echo "compare_with_perf: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (perf and moonrover profile other processes)"
[ -x "$bin" ] || die "no built tree: $bin is missing, run scripts/build.sh first"
[ -f "$collapse" ] || die "$collapse is missing: apt-get install linux-perf"
[ -x "$python" ] || die "$python is missing: apt-get install python3"
for need in perf:linux-perf luajit:luajit nginx:nginx wrk:wrk redis-server:redis-server \
  redis-cli:redis-tools redis-benchmark:redis-tools curl:curl shuf:coreutils; do
  command -v "${need%%:*}" >/dev/null || die "${need%%:*} is missing: apt-get install ${need#*:}"
done

work=$(mktemp -d /tmp/moonrover-compare.XXXXXX)
started=() # the current workload's processes, the first one profiled
perf_pid=  # a perf record still running
stop_all() {
  local p
  for p in $perf_pid "${started[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in $perf_pid "${started[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  started=()
  perf_pid=
}
trap 'stop_all; rm -rf "$work"' EXIT
trap 'die "interrupted"' INT TERM

# A TCP port on 127.0.0.1 that nothing listens on.
free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  die "no free TCP port found"
}

# Repeats a command until it succeeds, for at most 10 s.
wait_for() {
  local _
  for _ in $(seq 100); do
    "$@" >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "gave up waiting for: $*"
}

# Profiles PIDS (comma-separated) with both tools at once and compares.
profile_both() {
  local name=$1 pids=$2 dir=$work/$1
  mkdir -p "$dir"
  echo "### $name (pid $pids)"
  echo
  local graph=(-g) compare=(scripts/bench/compare_folded.lua "$dir/mr.folded" "$dir/perf.folded" 15)
  if [ "$call_graph" = dwarf ]; then
    graph=(--call-graph dwarf)
    compare=(scripts/bench/compare_chains.lua "$dir/mr.folded" "$dir/perf.folded" 20)
  fi
  perf record -q -F "$hz" "${graph[@]}" -p "$pids" -o "$dir/perf.data" -- sleep "$seconds" \
    >"$dir/perf-record.log" 2>&1 &
  perf_pid=$!
  "$bin" profile -p "$pids" -F "$hz" -d "$seconds" ${UNWIND:+--unwind "$UNWIND"} -o "$dir/mr.folded" \
    >"$dir/moonrover.log" 2>&1 ||
    die "moonrover profile failed: $(tail -1 "$dir/moonrover.log")"
  wait "$perf_pid" || die "perf record failed: $(tail -1 "$dir/perf-record.log")"
  perf_pid=
  # --kernel marks kernel frames "_[k]", as moonrover's folded output does.
  perf script -i "$dir/perf.data" -s "$collapse" -- --kernel >"$dir/perf.folded" 2>"$dir/perf-script.log"
  luajit "${compare[@]}"
  echo
  echo "moonrover: $(grep -m1 'samples lost:' "$dir/moonrover.log")"
  echo
  if [ -n "$keep" ]; then
    mkdir -p "$keep/$name"
    cp "$dir"/perf.data "$dir"/*.folded "$dir"/*.log "$keep/$name/"
  fi
}

# Each workload runs for the profile plus this margin (warm-up and start-up).
run_for=$((seconds + 10))

# a) Debian's python3, a pure-Python loop: recursive calls and JSON round trips.
"$python" -c '
import json, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
doc = {"id": 1, "tags": ["a", "b", "c"], "values": list(range(50)), "name": "moonrover"}
end = time.monotonic() + '"$run_for"'
while time.monotonic() < end:
    fib(18)
    json.loads(json.dumps(doc))
' &
started+=($!)
sleep 2
profile_both python3 "${started[0]}"
stop_all

# b) nginx, one worker serving a 1 KiB file, under wrk.
dir=$work/nginx
mkdir -p "$dir/www" "$dir/tmp"
chmod 755 "$work" "$dir" "$dir/www"
head -c 1024 /dev/zero | tr '\0' 'x' >"$dir/www/index.html"
port=$(free_port)
cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $dir/www;
  }
}
EOF
nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" &
started+=($!)
wait_for curl -sf "http://127.0.0.1:$port/index.html"
workers=$(pgrep -d, -P "${started[0]}")
[ -n "$workers" ] || die "nginx started no worker: $(tail -1 "$dir/error.log")"
wrk -t2 -c32 -d"${run_for}s" "http://127.0.0.1:$port/index.html" >"$dir/wrk.log" 2>&1 &
started+=($!)
sleep 2
profile_both nginx "$workers"
stop_all

# c) redis-server under redis-benchmark, looping over SET, GET, LPUSH, INCR.
dir=$work/redis-server
mkdir -p "$dir"
port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
  --daemonize no --logfile "$dir/redis.log" &
started+=($!)
wait_for redis-cli -p "$port" ping
redis-benchmark -p "$port" -q -l -t set,get,lpush,incr >/dev/null 2>&1 &
started+=($!)
sleep 2
profile_both redis-server "${started[0]}"
stop_all

echo "compare_with_perf: done in $SECONDS s" >&2
