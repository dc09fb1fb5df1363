#!/usr/bin/env bash
# Benchmark: the cost of walking user stacks by unwind tables (CFI) against
# frame pointers, and against perf, in one run on the same load: a
# whole-system profile of SECONDS at HZ by
#   moonrover profile --unwind cfi,  moonrover profile --unwind fp,
#   perf record -a -g (+ stackcollapse.py),  perf record -a --call-graph dwarf (+ stackcollapse.py),
# alternating ROUNDS times, while one frameless workload (-O2 without frame
# pointers, through libc) and one python3 loop per CPU keep the CPUs busy.
# Reports, per tool, the profiler's CPU time (user + system, post-processing
# included) and, for moonrover, the mean run time of its sampling program per
# sample (the kernel's BPF statistics: the cost paid in the sampled task) and
# the unwind tables' memory. Needs root and a built tree (scripts/build.sh).
#   usage: scripts/bench/unwind_cost.sh [SECONDS] [ROUNDS] [HZ]
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-10}
rounds=${2:-2}
hz=${3:-99}
bin=./build/moonrover
collapse=/usr/lib/perf-core/scripts/python/stackcollapse.py
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'kill $(jobs -p) 2>/dev/null || true; sysctl -qw kernel.bpf_stats_enabled="$stats_before"; rm -rf "$work"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }
[ -f "$collapse" ] || { echo "bench: $collapse missing (package linux-perf)" >&2; exit 1; }

total=$(( (seconds + 10) * rounds * 4 + 30 ))
for _ in $(seq "$(nproc)"); do
  ./build/workloads/frameless cpu "$total" &
  /usr/bin/python3 -c '
import json, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
end = time.monotonic() + '"$total"'
while time.monotonic() < end:
    fib(18)
    json.loads(json.dumps({"values": list(range(50))}))
' &
done
sysctl -qw kernel.bpf_stats_enabled=1

calc() { awk "BEGIN { printf \"%.3f\", $* }"; }

# CPU seconds (user + system) of a command.
measure() {
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" >"$work/stdout" 2>"$work/stderr"
  awk '{ printf "%.3f\n", $1 + $2 }' "$work/time"
}

# "run_time_ns run_cnt" of the on_cpu_sample program that process pid holds
# (found through its descriptors: this bpftool cannot list programs' owners).
bpf_cost() {
  local id
  for id in $(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u); do
    bpftool -j prog show id "$id" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try:
    p = json.load(sys.stdin)
except ValueError:
    sys.exit(0)  # closed since its id was read
if p.get("name") == "on_cpu_sample":
    print(p.get("run_time_ns", 0), p.get("run_cnt", 0))
'
  done
}

# One moonrover profile: "cpu_seconds ns_per_sample"; the summary in $work/stdout.
moonrover_run() {
  local unwind=$1 timer pid ns=0 cnt=0 cost
  /usr/bin/time -f "%U %S" -o "$work/time" "$bin" profile -d "$seconds" -F "$hz" --unwind "$unwind" \
    -o "$work/mr.folded" >"$work/stdout" 2>"$work/stderr" &
  timer=$!
  sleep 1
  pid=$(pgrep -P "$timer" -x moonrover || true)
  sleep $((seconds - 2))
  cost=$(bpf_cost "${pid:-0}")
  [ -n "$cost" ] && read -r ns cnt <<<"$cost"
  wait "$timer"
  awk -v ns="$ns" -v cnt="$cnt" '{ printf "%.3f %.0f\n", $1 + $2, (cnt > 0 ? ns / cnt : 0) }' "$work/time"
}

declare -A cpu ns
tables=
for r in $(seq "$rounds"); do
  for unwind in cfi fp; do
    moonrover_run "$unwind" >"$work/run" # in this shell: a subshell would run the EXIT trap
    read -r c n <"$work/run"
    cpu[$unwind]=$(calc "${cpu[$unwind]:-0} + $c")
    ns[$unwind]=$(calc "${ns[$unwind]:-0} + $n")
    [ "$unwind" = cfi ] && tables=$(grep -o 'by CFI tables ([^)]*)' "$work/stdout" || true)
  done
  c1=$(measure perf record -q -F "$hz" -a -g -o "$work/perf.data" -- sleep "$seconds")
  c2=$(measure perf script -i "$work/perf.data" -s "$collapse")
  cpu[perf_fp]=$(calc "${cpu[perf_fp]:-0} + $c1 + $c2")
  c1=$(measure perf record -q -F "$hz" -a --call-graph dwarf -o "$work/perf.data" -- sleep "$seconds")
  c2=$(measure perf script -i "$work/perf.data" -s "$collapse")
  cpu[perf_dwarf]=$(calc "${cpu[perf_dwarf]:-0} + $c1 + $c2")
  echo "round $r: cfi ${cpu[cfi]} fp ${cpu[fp]} perf -g ${cpu[perf_fp]} perf dwarf ${cpu[perf_dwarf]} (cumulated)" >&2
done

mean() { calc "$1 / $rounds"; }
echo "| ${seconds} s whole-system profile at ${hz} Hz (mean of $rounds) | CPU time | share of one core | BPF per sample |"
echo "|---|---|---|---|"
echo "| moonrover --unwind cfi | $(mean "${cpu[cfi]}") s | $(calc "100 * ${cpu[cfi]} / $rounds / $seconds")% | $(mean "${ns[cfi]}") ns |"
echo "| moonrover --unwind fp | $(mean "${cpu[fp]}") s | $(calc "100 * ${cpu[fp]} / $rounds / $seconds")% | $(mean "${ns[fp]}") ns |"
echo "| perf record -g + stackcollapse | $(mean "${cpu[perf_fp]}") s | $(calc "100 * ${cpu[perf_fp]} / $rounds / $seconds")% | |"
echo "| perf record --call-graph dwarf + stackcollapse | $(mean "${cpu[perf_dwarf]}") s | $(calc "100 * ${cpu[perf_dwarf]} / $rounds / $seconds")% | |"
echo
echo "moonrover cfi / perf -g CPU time: $(calc "${cpu[cfi]} / ${cpu[perf_fp]}"); user stacks $tables"
