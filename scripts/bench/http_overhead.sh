#!/usr/bin/env bash
# Benchmark: what tracing HTTP costs the traced server. nginx (Debian's, one
# worker, `return 200 "ok"`, its own configuration in a temporary directory on
# a free port) serves `wrk -t1 -c16` for SECONDS per run; rounds alternate a
# run without tracing, the floor and a run with tracing, ROUNDS times, and the
# figures are the medians of the rounds' ratios of requests per second (the
# machine is shared: nothing is pinned, nothing assumes an idle CPU). The
# floor is the untraced run plus bpftrace counting the same two socket
# tracepoints per pid, nothing copied: what any tracer on those hooks costs at
# least, so traced / floor is what moonrover adds above it. Then one more traced run
# with the kernel's BPF statistics on (sysctl kernel.bpf_stats_enabled, put
# back as it was at exit; off during the rounds, as it slows every program a
# little) gives the kernel side's time per program. Printed: one Markdown
# table with every round, the median ratios, the CPU per traced request (BPF
# time per program, and the tracing process's user+sys time per thread, from
# /proc) and what the tracer reports it lost.
#   usage: scripts/bench/http_overhead.sh [--mode trace|agent] [SECONDS (5)] [ROUNDS (5, at least 3)]
# --mode trace (the default): `moonrover trace -p <nginx pids> -o /dev/null
#   --format json`; a request traced is an exchange its summary counts.
# --mode agent: `moonrover agent` with its network tracer on (every process,
#   the bundled scripts) against `moonrover agent --network off`; needs an
#   agent that has the network tracer, and counts the requests wrk completed
#   as traced.
# BIN=path/to/moonrover picks another build. Exits 1 only when it cannot set
# up (not root, no build, a tool missing, nginx or the tracer not starting).
set -euo pipefail
cd "$(dirname "$0")/../.."

mode=trace
if [ "${1:-}" = "--mode" ]; then
  mode=${2:-}
  shift 2 || true
fi
seconds=${1:-5}
rounds=${2:-5}
bin=${BIN:-./build/moonrover}

die() {
  echo "http_overhead: $*" >&2
  exit 1
}

case "$mode" in
  trace | agent) ;;
  *) die "unknown mode '$mode' (trace or agent)" ;;
esac
[ "$rounds" -ge 3 ] 2>/dev/null || die "at least 3 rounds, not '$rounds'"
[ "$seconds" -ge 1 ] 2>/dev/null || die "SECONDS must be a whole number of seconds, not '$seconds'"
[ "$(id -u)" -eq 0 ] || die "needs root (moonrover traces other processes)"
[ -x "$bin" ] || die "no built tree: $bin is missing, run scripts/build.sh first"
for need in nginx:nginx wrk:wrk bpftool:bpftool bpftrace:bpftrace curl:curl shuf:coreutils; do
  command -v "${need%%:*}" >/dev/null || die "${need%%:*} is missing: apt-get install ${need#*:}"
done
if [ "$mode" = agent ] && ! "$bin" agent --help 2>&1 | grep -q -- '--network on|off'; then
  die "--mode agent: this build's agent has no network tracer (its 'agent --help' has no --network on|off); use --mode trace"
fi

work=$(mktemp -d /tmp/moonrover-http-overhead.XXXXXX)
nginx_pid=
tracer_pid=
floor_pid=
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
stop_tracer() {
  if [ -n "$tracer_pid" ]; then
    kill -INT "$tracer_pid" 2>/dev/null || true
    wait "$tracer_pid" 2>/dev/null || true
    tracer_pid=
  fi
}
# bpftrace prints its counts at SIGINT; one was seen lost (bpftrace running
# on, its handler in place), so the signal is sent again each second, for 20 s.
stop_floor() {
  local _
  [ -n "$floor_pid" ] || return 0
  for _ in $(seq 20); do
    kill -INT "$floor_pid" 2>/dev/null || break
    for _ in $(seq 10); do
      kill -0 "$floor_pid" 2>/dev/null || break 2
      sleep 0.1
    done
  done
  if kill -0 "$floor_pid" 2>/dev/null; then
    kill -KILL "$floor_pid" 2>/dev/null || true
    echo "http_overhead: bpftrace did not stop at SIGINT in 20 s, killed: this round has no floor counts" >&2
  fi
  wait "$floor_pid" 2>/dev/null || true
  floor_pid=
}
cleanup() {
  stop_floor
  stop_tracer
  if [ -n "$nginx_pid" ]; then
    kill "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  sysctl -q -w kernel.bpf_stats_enabled="$stats_before" || true
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

start_nginx() {
  local dir=$work/nginx _
  mkdir -p "$dir/tmp"
  port=$(free_port)
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
    listen 127.0.0.1:$port;
    location / { return 200 "ok"; }
  }
}
EOF
  nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" &
  nginx_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/" >/dev/null || die "nginx does not answer: $(tail -1 "$dir/error.log")"
  nginx_pids="$nginx_pid,$(pgrep -d, -P "$nginx_pid")" || die "nginx started no worker"
}

# wrk for SECONDS; sets load_n (requests completed) and load_rps.
load() {
  wrk -t1 -c16 -d"${1}s" "http://127.0.0.1:$port/" >"$work/wrk.log" 2>&1 || die "wrk failed: $(tail -1 "$work/wrk.log")"
  read -r load_n load_rps < <(awk '/ requests in / { n = $1 } /^Requests\/sec:/ { r = $2 } END { print n, r }' "$work/wrk.log")
}

# The CPU ticks (user+sys) of the tracer's main thread and of its other threads: "MAIN OTHER".
ticks() {
  local t main=0 other=0 n
  for t in /proc/"$tracer_pid"/task/*; do
    n=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$t/stat" 2>/dev/null) || continue
    if [ "${t##*/}" = "$tracer_pid" ]; then main=$((main + n)); else other=$((other + n)); fi
  done
  echo "$main $other"
}

# Waits until the tracer's CPU time stops growing: it has handled its backlog.
settle() {
  local last now _
  last=$(ticks)
  for _ in $(seq 100); do
    sleep 0.5
    now=$(ticks)
    [ "$now" = "$last" ] && return
    last=$now
  done
}

# The tracer's BPF programs: "ID NAME RUN_TIME_NS RUN_CNT" per line, from the
# fdinfo of the program descriptors it holds.
bpf_runs() {
  local fd id name
  for fd in /proc/"$tracer_pid"/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "anon_inode:bpf-prog" ] || continue
    id=$(awk '$1 == "prog_id:" { print $2 }' "/proc/$tracer_pid/fdinfo/${fd##*/}")
    name=$(bpftool prog show id "$id" | sed -n '1s/.* name \([^ ]*\) .*/\1/p')
    awk -v id="$id" -v name="$name" '$1 == "run_time_ns:" { t = $2 } $1 == "run_cnt:" { c = $2 }
      END { print id, name, t + 0, c + 0 }' "/proc/$tracer_pid/fdinfo/${fd##*/}"
  done | sort
}

# Starts the tracer (or the agent) and waits until its programs are attached:
# its data-plane thread starts once they are.
start_tracer() {
  local traced=$1 off=() _
  [ "$traced" = no ] && off=(--network off)
  case "$mode/$traced" in
    trace/yes)
      "$bin" trace -p "$nginx_pids" -o /dev/null --format json 2>"$work/summary" &
      ;;
    agent/*)
      "$bin" agent --http 127.0.0.1:0 --pid-file off "${off[@]}" 2>"$work/agent.log" &
      ;;
  esac
  tracer_pid=$!
  for _ in $(seq 200); do
    grep -qx 'mr-data-plane' /proc/"$tracer_pid"/task/*/comm 2>/dev/null && return
    kill -0 "$tracer_pid" 2>/dev/null || break
    sleep 0.05
  done
  die "the tracer did not start: $(cat "$work/summary" "$work/agent.log" 2>/dev/null | tail -1)"
}

# The agent's nonzero drop and loss series, from its /metrics.
agent_losses() {
  local port_a
  port_a=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$work/agent.log" | head -1)
  curl -s "http://127.0.0.1:$port_a/metrics" | awk '/^[a-z_]*(dropped|lost)[a-z_]*[{ ]/ && $NF != 0 { printf "%s%s", s, $0; s = ", " }'
}

# One traced run. Sets served and rps (wrk's), main and other (the tracer's
# CPU ticks from the load's start until it has handled everything), exchanges
# (requests traced) and lost (what it reports losing); the BPF programs' time
# over the same span goes to $work/bpf, "NAME RUN_TIME_NS RUN_CNT" per line.
traced_run() {
  local m0 o0 m1 o1
  start_tracer yes
  read -r m0 o0 < <(ticks)
  bpf_runs >"$work/bpf0"
  load "$seconds"
  settle
  read -r m1 o1 < <(ticks)
  bpf_runs >"$work/bpf1"
  join "$work/bpf0" "$work/bpf1" | awk '{ print $2, $6 - $3, $7 - $4 }' >"$work/bpf"
  served=$load_n rps=$load_rps main=$((m1 - m0)) other=$((o1 - o0))
  if [ "$mode" = agent ]; then
    exchanges=$load_n
    lost=$(agent_losses)
  fi
  stop_tracer
  if [ "$mode" = trace ]; then
    exchanges=$(awk '/ exchange\(s\)/ { n += $2 } END { print n + 0 }' "$work/summary")
    lost=$(sed -n 's/^  lost: //p' "$work/summary")
  fi
  lost=${lost:-nothing}
}

# One run without tracing (in agent mode, the agent with --network off); sets plain.
untraced_run() {
  if [ "$mode" = agent ]; then
    start_tracer no
  fi
  load "$seconds"
  stop_tracer
  plain=$load_rps
}

# The floor: bpftrace counting sock_send_length and sock_recv_length per pid,
# on top of what an untraced run has; sets floor (wrk's req/s) and
# floor_events (the events it counted in nginx's processes, per request).
floor_run() {
  local _
  if [ "$mode" = agent ]; then
    start_tracer no
  fi
  # BEGIN runs once every probe is attached.
  bpftrace -e 'BEGIN { printf("floor attached\n"); }
    tracepoint:sock:sock_send_length { @sends[pid] = count(); }
    tracepoint:sock:sock_recv_length { @recvs[pid] = count(); }' >"$work/floor.out" 2>&1 &
  floor_pid=$!
  for _ in $(seq 600); do
    grep -qx 'floor attached' "$work/floor.out" && break
    kill -0 "$floor_pid" 2>/dev/null || die "bpftrace did not start: $(tail -1 "$work/floor.out")"
    sleep 0.05
  done
  grep -qx 'floor attached' "$work/floor.out" || die "bpftrace did not attach in 30 s"
  load "$seconds"
  stop_floor
  stop_tracer
  floor=$load_rps
  floor_events=$(awk -v pids="$nginx_pids" -v n="$load_n" 'BEGIN { split(pids, p, ","); for (i in p) want[p[i]] = 1 }
    /^@[a-z]+\[[0-9]+\]: [0-9]+$/ { k = $1; sub(/^@[a-z]+\[/, "", k); sub(/\]:$/, "", k); if (k in want) c += $2 }
    END { printf "%.2f", n ? c / n : 0 }' "$work/floor.out")
}

start_nginx
hz=$(getconf CLK_TCK)
sysctl -q -w kernel.bpf_stats_enabled=0
load 2 # warm-up

echo "mode $mode: nginx (pids $nginx_pids) under wrk -t1 -c16, $seconds s per run, $rounds rounds"
echo
echo "floor: the untraced run plus bpftrace counting sock:sock_send_length and sock:sock_recv_length per pid"
echo
echo "| round | untraced req/s | floor req/s | traced req/s | traced / untraced | floor / untraced | traced / floor" \
  "| floor events per request (nginx) | tracer CPU, main / other threads | requests traced (served) | lost |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
traced_ratios=() floor_ratios=() above_ratios=()
for i in $(seq "$rounds"); do
  untraced_run
  floor_run
  traced_run
  traced_ratios+=("$(awk -v p="$plain" -v t="$rps" 'BEGIN { printf "%.3f", t / p }')")
  floor_ratios+=("$(awk -v p="$plain" -v f="$floor" 'BEGIN { printf "%.3f", f / p }')")
  above_ratios+=("$(awk -v f="$floor" -v t="$rps" 'BEGIN { printf "%.3f", t / f }')")
  awk -v i="$i" -v p="$plain" -v f="$floor" -v t="$rps" -v r="${traced_ratios[-1]}" -v rf="${floor_ratios[-1]}" \
    -v ra="${above_ratios[-1]}" -v fe="$floor_events" -v m="$main" -v o="$other" -v hz="$hz" \
    -v x="$exchanges" -v s="$served" -v l="$lost" 'BEGIN {
      printf "| %d | %.0f | %.0f | %.0f | %s | %s | %s | %s | %.2f / %.2f s | %d (%d) | %s |\n",
        i, p, f, t, r, rf, ra, fe, m / hz, o / hz, x, s, l }'
done
echo
# The median of the ratios given as arguments.
median() {
  printf '%s\n' "$@" | sort -n | awk '{ r[NR] = $1 } END { print r[int((NR + 1) / 2)] }'
}
echo "medians over $rounds rounds: traced / untraced **$(median "${traced_ratios[@]}")** (goal: at least 0.85)," \
  "floor / untraced **$(median "${floor_ratios[@]}")**, traced / floor **$(median "${above_ratios[@]}")**"

# The cost run: BPF statistics on, for the kernel side's time per program.
sysctl -q -w kernel.bpf_stats_enabled=1
traced_run
sysctl -q -w kernel.bpf_stats_enabled="$stats_before"
echo
echo "CPU per request, from one more traced run with BPF statistics on ($rps req/s, $served requests served," \
  "$exchanges traced; BPF per request served, the tracer per request traced):"
echo
echo "| part | runs | ns per run | ns per request |"
echo "|---|---|---|---|"
awk -v served="$served" -v x="$exchanges" -v m="$main" -v o="$other" -v hz="$hz" '
  !($1 in runs) { names[++n] = $1 }
  { runs[$1] += $3; ns[$1] += $2; bpf += $2 }
  END {
    for (i = 1; i <= n; i++) if (runs[names[i]] > 0)
      printf "| BPF %s | %d | %.0f | %.0f |\n", names[i], runs[names[i]], ns[names[i]] / runs[names[i]], ns[names[i]] / served
    printf "| BPF, every program | | | **%.0f** |\n", bpf / served
    printf "| tracer main thread (user+sys) | | | %.0f |\n", m / hz * 1e9 / x
    printf "| tracer other threads (user+sys) | | | %.0f |\n", o / hz * 1e9 / x
    printf "| **total** | | | **%.0f** (goal: at most 1500) |\n", bpf / served + (m + o) / hz * 1e9 / x
  }' <(sort "$work/bpf")
echo
echo "lost in that run: $lost"
