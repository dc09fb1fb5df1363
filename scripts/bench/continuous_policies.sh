#!/usr/bin/env bash
# Benchmark: what continuous profiling costs the agent. Runs the Rover
# drop-in against the stand-in OAP (spec/support/oap) with POLICIES services,
# one process each (copies of the sleeper workload) and a policy of all five
# check types per service (thresholds never reached, so the cost is the
# steady state: sampling, windows, checks, meters), and measures the agent's
# CPU over SECONDS; then the same run with no policy, for the baseline.
#   usage: scripts/bench/continuous_policies.sh [SECONDS] [POLICIES]
# Needs root, a built tree (scripts/build.sh) and Debian's python3-grpcio.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-60}
policies=${2:-20}
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$work/agent.pid" ] && kill "$(cat "$work/agent.pid")" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x build/moonrover ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }

mkdir -p "$work/w"
for i in $(seq -w 1 "$policies"); do
  cp build/workloads/sleeper "$work/w/sleeper$i"
  "$work/w/sleeper$i" 3600 >/dev/null 2>&1 &
  pids+=($!)
done

# The policy file: one policy per service, all five check types.
policy_file() {
  local n=$1 sep=""
  printf '{'
  for i in $(seq -w 1 "$n"); do
    printf '%s"bench-sleeper%s": {"ON_CPU": {' "$sep" "$i"
    printf '"PROCESS_CPU": {"Threshold": "95", "Period": 10, "Count": 8}, '
    printf '"PROCESS_THREAD_COUNT": {"Threshold": "5000", "Period": 5, "Count": 3}, '
    printf '"SYSTEM_LOAD": {"Threshold": "500", "Period": 20, "Count": 10}}, '
    printf '"NETWORK": {"HTTP_ERROR_RATE": {"Threshold": "90", "Period": 10, "Count": 5}, '
    printf '"HTTP_AVG_RESPONSE_TIME": {"Threshold": "60000", "Period": 15, "Count": 5, "URIRegex": "^/api"}}}'
    sep=", "
  done
  printf '}\n'
}

/usr/bin/python3 spec/support/oap/oap_stub.py --port 0 --record "$work/oap.jsonl" --policies "$work/policies.json" \
  >"$work/oap.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^port ' "$work/oap.out" && break; sleep 0.1; done
port=$(awk '/^port / { print $2 }' "$work/oap.out")
[ -n "$port" ] || { echo "bench: the stand-in OAP did not start: $(cat "$work/oap.out")" >&2; exit 1; }

cat >"$work/rover.yaml" <<EOF
core:
  backend:
    addr: 127.0.0.1:$port
process_discovery:
  heartbeat_period: 5s
  kubernetes:
    active: false
  scanner:
    regex:
      - match_cmd: "^$work/w/sleeper"
        layer: OS_LINUX
        service_name: "bench-{{.Process.ExeName}}"
        instance_name: bench-instance
        process_name: "{{.Process.ExeName}}"
        labels: ""
EOF

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# One run: the agent with policy file $1; prints its CPU ticks over the
# window and the meter collections OAP received meanwhile.
run() {
  cp "$1" "$work/policies.json"
  rm -f "$work/agent.pid"
  ./build/moonrover agent --config "$work/rover.yaml" --network off --http 127.0.0.1:0 \
    --pid-file "$work/agent.pid" --scripts "$work/scripts" 2>"$work/agent.log" &
  for _ in $(seq 100); do [ -s "$work/agent.pid" ] && break; sleep 0.1; done
  local pid
  pid=$(cat "$work/agent.pid")
  sleep 20 # reported, policies received (profiling.check_interval is 10 s), windows filled
  local m0 t0 t1 m1
  m0=$(grep -c '"rpc": *"collectMeterBatch"' "$work/oap.jsonl" || true)
  t0=$(ticks "$pid")
  sleep "$seconds"
  t1=$(ticks "$pid")
  m1=$(grep -c '"rpc": *"collectMeterBatch"' "$work/oap.jsonl" || true)
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$((t1 - t0)) $((m1 - m0))"
}

mkdir -p "$work/scripts"
policy_file "$policies" >"$work/with.json"
echo '{}' >"$work/none.json"
read -r with meters < <(run "$work/with.json")
read -r none _ < <(run "$work/none.json")
reports=$(grep -c '"rpc": *"reportProfilingTask"' "$work/oap.jsonl" || true)

pct() { awk -v t="$1" -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.3f%%", 100 * t / hz / s }'; }
echo "| agent over $seconds s | CPU (% of one core) | ticks of 1/$hz s |"
echo "|---|---|---|"
echo "| $policies policies, $policies processes, 5 check types each | $(pct "$with") | $with |"
echo "| no policy (baseline) | $(pct "$none") | $none |"
echo "| difference | $(pct "$((with - none))") | $((with - none)) |"
echo "meter collections received with the policies: $meters; triggers reported: $reports"
