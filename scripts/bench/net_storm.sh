#!/usr/bin/env bash
# Benchmark: the agent's network tracer under a storm of connections and
# after it. `moonrover agent` (the bundled scripts, network tracer on, every
# process traced) and Debian's nginx (`return 200 "ok"`, its own configuration
# in a temporary directory on a free port, one worker per PER connections of
# the idle phase, on one port with reuseport); phases:
#   storm  wrk -t1 -c500 -d STORM s -H "Connection: close" (a new connection per request)
#   idle   IDLE keep-alive connections, each with one request answered, held
#          HOLD s by /usr/bin/python3 helpers (scripts/bench/net_storm_idle.py,
#          PER connections each), then closed
#   quiet  QUIET s with no traffic
# and one Markdown table with a row before the storm and one at the end of
# each phase: /healthz's first line, the bundled network script's state, the
# agent's RSS (and its peak so far), the connections the script's tracer
# follows (moonrover_net_connections), that script's Lua memory, the
# entries of the kernel's connection map (moonrover_net_kernel_connections
# when the agent exports it, else counted with bpftool in the agent's own
# `conns` map), the TCP connections established on the whole host (`ss`:
# the agent traces every process, so other traffic on the machine counts
# too) and the records and connection events dropped so far. Last, when a
# script was disabled, how long after the storm began.
#   usage: scripts/bench/net_storm.sh [STORM (15)] [IDLE (20000)] [HOLD (30)] [QUIET (60)]
# BIN=path/to/moonrover picks another build. Needs root (the agent traces
# every process). PER is 10000, or fewer when the open files limit is lower:
# no process needs more descriptors than the hard limit allows. Exits 1 only
# when it cannot set up.
set -euo pipefail
cd "$(dirname "$0")/../.."

storm=${1:-15}
idle=${2:-20000}
hold=${3:-30}
quiet=${4:-60}
bin=${BIN:-./build/moonrover}

die() {
  echo "net_storm: $*" >&2
  exit 1
}

for n in "$storm" "$idle" "$hold" "$quiet"; do
  [ "$n" -ge 1 ] 2>/dev/null || die "STORM, IDLE, HOLD and QUIET are whole numbers above 0, not '$n'"
done
[ "$(id -u)" -eq 0 ] || die "needs root (moonrover traces other processes)"
[ -x "$bin" ] || die "no built tree: $bin is missing, run scripts/build.sh first"
for need in nginx:nginx wrk:wrk bpftool:bpftool curl:curl shuf:coreutils; do
  command -v "${need%%:*}" >/dev/null || die "${need%%:*} is missing: apt-get install ${need#*:}"
done
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 is missing: apt-get install python3"
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=1048576
ulimit -n "$hard" || die "cannot raise the open files limit to its hard limit $hard"
per=$((hard - 2048 < 10000 ? hard - 2048 : 10000))
[ "$per" -ge 1000 ] || die "the open files limit ($hard) leaves under 1000 connections per process"
parts=$(((idle + per - 1) / per))

work=$(mktemp -d /tmp/moonrover-net-storm.XXXXXX)
nginx_pid=
agent_pid=
helper_pids=()
cleanup() {
  local p
  exec 4>&- 2>/dev/null || true
  for p in "${helper_pids[@]}" $agent_pid $nginx_pid; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'die "interrupted"' INT TERM

# A TCP port on 127.0.0.1 that nothing listens on, below the ephemeral range
# (a client's port there makes nginx's bind fail).
free_port() {
  local p low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  for p in $(shuf -i 10000-$((low - 1)) -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  die "no free TCP port found"
}

# nginx keeps idle connections longer than the idle phase lasts.
start_nginx() {
  local dir=$work/nginx _
  mkdir -p "$dir/tmp"
  port=$(free_port)
  cat >"$dir/nginx.conf" <<EOF
daemon off;
worker_processes $parts;
worker_rlimit_nofile $((per + 2048));
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections $((per + 1024)); }
http {
  access_log off;
  keepalive_timeout $((hold + 300))s;
  keepalive_requests 1000000;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  server {
    listen 127.0.0.1:$port backlog=4096 reuseport;
    location / { return 200 "ok"; }
  }
}
EOF
  nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" &
  nginx_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "nginx does not answer: $(tail -1 "$dir/error.log")"
}

# Starts the agent and waits for its HTTP port and its data-plane thread.
start_agent() {
  local _
  "$bin" agent --http 127.0.0.1:0 --pid-file off 2>"$work/agent.log" &
  agent_pid=$!
  for _ in $(seq 200); do
    agent_port=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$work/agent.log" | head -1)
    [ -n "$agent_port" ] && grep -qx 'mr-data-plane' /proc/"$agent_pid"/task/*/comm 2>/dev/null && return
    kill -0 "$agent_pid" 2>/dev/null || break
    sleep 0.05
  done
  die "the agent did not start: $(tail -1 "$work/agent.log")"
}

# The value of one series (name{labels} as written) in $work/metrics; "-" when absent.
metric() {
  awk -v s="$1" 'index($0, s " ") == 1 { v = $2 } END { print v == "" ? "-" : v }' "$work/metrics"
}

# The sum of the series whose name{labels} match the awk pattern, in $work/metrics.
metric_sum() {
  awk -v re="$1" '$1 ~ re { v += $2 } END { print v + 0 }' "$work/metrics"
}

# Entries of the agent's own BPF map named conns, counted with bpftool.
kernel_conns_bpftool() {
  local fd id
  for fd in /proc/"$agent_pid"/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "anon_inode:bpf-map" ] || continue
    id=$(awk '$1 == "map_id:" { print $2 }' "/proc/$agent_pid/fdinfo/${fd##*/}")
    [[ "$(bpftool map show id "$id")" == *" name conns "* ]] || continue
    bpftool map dump id "$id" | grep -c '"key":' || true
    return
  done
  echo "-"
}

# One row of the table for the phase named $1.
sample() {
  local health script rss peak kconns host
  curl -s --max-time 10 "http://127.0.0.1:$agent_port/metrics" >"$work/metrics" || : >"$work/metrics"
  curl -s --max-time 10 "http://127.0.0.1:$agent_port/healthz" >"$work/healthz" || : >"$work/healthz"
  health=$(head -1 "$work/healthz")
  script=$(sed -n 's/^  network: //p' "$work/healthz")
  rss=$(awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$agent_pid/status")
  peak=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$agent_pid/status")
  kconns=$(metric moonrover_net_kernel_connections)
  [ "$kconns" = "-" ] && kconns="$(kernel_conns_bpftool) (bpftool)"
  host=$(ss -tnH state established | wc -l)
  awk -v phase="$1" -v h="${health:-no answer}" -v s="${script:-absent}" -v rss="$rss" -v peak="$peak" \
    -v conns="$(metric 'moonrover_net_connections{script="network"}')" \
    -v lua="$(metric 'moonrover_lua_memory_bytes{script="network"}')" -v k="$kconns" -v host="$host" \
    -v dq="$(metric 'moonrover_events_dropped_total{stream="net",reason="queue_full"}')" \
    -v dk="$(metric 'moonrover_net_records_lost_total{reason="kernel_ring_full"}')" \
    -v cq="$(metric 'moonrover_events_dropped_total{stream="tcp",reason="queue_full"}')" \
    -v ck="$(metric_sum '^moonrover_net_connection_events_lost_total')" 'BEGIN {
      printf "| %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s / %s | %s / %s |\n", phase, h, s, rss, peak,
        conns, lua == "-" ? lua : sprintf("%.1f", lua / 1048576), k, host, dq, dk, cq, ck }'
}

start_nginx
start_agent
sleep 5

echo "nginx on 127.0.0.1:$port (pid $nginx_pid), moonrover agent (pid $agent_pid, bundled scripts, network tracer on)"
echo
echo "| phase | /healthz first line | network script | agent RSS MiB (peak) | moonrover_net_connections" \
  "| network script Lua MiB | kernel conns map | host TCP connections established" \
  "| net records dropped: queue / kernel ring" \
  "| connection events dropped: queue / kernel ring |"
echo "|---|---|---|---|---|---|---|---|---|---|"
sample "before"

storm_start=$(date +%s)
wrk -t1 -c500 -d"${storm}s" -H "Connection: close" "http://127.0.0.1:$port/" >"$work/wrk.log" 2>&1 ||
  die "wrk failed: $(tail -1 "$work/wrk.log")"
sample "end of the storm (wrk -c500, ${storm} s, Connection: close)"

# The helpers, PER connections each (the last one the rest), hold them until
# the pipe they read is closed.
mkfifo "$work/hold"
for i in $(seq "$parts"); do
  n=$((i < parts ? per : idle - per * (parts - 1)))
  /usr/bin/python3 scripts/bench/net_storm_idle.py "$port" "$n" <"$work/hold" >"$work/helper$i.log" 2>&1 &
  helper_pids+=($!)
done
exec 4>"$work/hold"
for _ in $(seq 1200); do
  [ "$(cat "$work"/helper*.log | grep -c '^ready')" -eq "$parts" ] && break
  for p in "${helper_pids[@]}"; do
    kill -0 "$p" 2>/dev/null || die "an idle helper failed: $(cat "$work"/helper*.log | tail -1)"
  done
  sleep 0.1
done
[ "$(cat "$work"/helper*.log | grep -c '^ready')" -eq "$parts" ] ||
  die "the idle helpers did not open their connections in 120 s"
sleep "$hold"
sample "$idle idle connections, held ${hold} s"
exec 4>&-
for p in "${helper_pids[@]}"; do
  wait "$p" || die "an idle helper failed: $(cat "$work"/helper*.log | tail -1)"
done
helper_pids=()

sleep "$quiet"
sample "${quiet} s of quiet after"

echo
awk '/ requests in / { n = $1 } /^Requests\/sec:/ { r = $2 } /Socket errors/ { e = $0 }
  END { printf "storm: %d requests, %s req/s%s\n", n, r, e ? "; " e : "" }' "$work/wrk.log"
cat "$work"/helper*.log | awk -v want="$idle" -v parts="$parts" '$1 == "ready" { o += $2; a += $3 }
  END { printf "idle: %d of %d connections opened, %d answered (%d helpers)\n", o, want, a, parts }'
since=$(sed -n '1s/^degraded: script .* since \(.*\)$/\1/p' "$work/healthz")
if [ -n "$since" ]; then
  echo "the script named on /healthz was disabled at $since, $(($(date -d "$since" +%s) - storm_start)) s after the storm began"
fi
