#!/usr/bin/env bash
# Benchmark: CPU cost of a whole-system 99 Hz profile, moonrover against
# `perf record -F 99 -a -g` plus perf's own folding (stackcollapse.py), in one
# run on the same workload and duration, alternating ROUNDS times. Prints a
# Markdown table and the ratios. Needs root and a built tree (scripts/build.sh).
# WORKLOAD is "burn" (one CPU burner per CPU) or "churn" (200 new short-lived
# processes a second, each burning 2 ms: the cost of naming new processes).
#   usage: scripts/bench/profile_vs_perf.sh [SECONDS] [ROUNDS] [burn|churn]
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-10}
rounds=${2:-3}
workload=${3:-burn}
bin=./build/moonrover
collapse=/usr/lib/perf-core/scripts/python/stackcollapse.py
work=$(mktemp -d /tmp/moonrover-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench: build first (scripts/build.sh)" >&2; exit 1; }
[ -f "$collapse" ] || { echo "bench: $collapse missing (package linux-perf)" >&2; exit 1; }

# The same load for every run, for the whole benchmark.
total=$(( (seconds + 5) * rounds * 3 + 30 ))
case "$workload" in
  burn) for _ in $(seq "$(nproc)"); do ./build/workloads/cpu_ratio "$total" & done ;;
  churn) ./build/workloads/churn 200 "$total" 2 & ;;
  *) echo "bench: unknown workload $workload (burn or churn)" >&2; exit 2 ;;
esac

calc() { awk "BEGIN { printf \"%.3f\", $* }"; }

# Prints "cpu_seconds max_rss_kb" for a command (user+system, children included).
measure() {
  /usr/bin/time -f "%U %S %M" -o "$work/time" "$@" >"$work/stdout" 2>"$work/stderr"
  awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$work/time"
}

mr_cpu=0; perf_cpu=0; mr_rss=0; first_ms=()
for r in $(seq "$rounds"); do
  read -r c m < <(measure "$bin" profile -d "$seconds" -F 99 -o "$work/mr.folded")
  mr_cpu=$(calc "$mr_cpu + $c"); [ "$m" -gt "$mr_rss" ] && mr_rss=$m
  first_ms+=("$(sed -n 's/.*first sample \([0-9.]*\) ms after start.*/\1/p' "$work/stdout")")
  read -r c1 _ < <(measure perf record -q -F 99 -a -g -o "$work/perf.data" -- sleep "$seconds")
  read -r c2 _ < <(measure perf script -i "$work/perf.data" -s "$collapse")
  perf_cpu=$(calc "$perf_cpu + $c1 + $c2")
  echo "round $r: moonrover ${c}s cpu, perf record ${c1}s + perf script ${c2}s" >&2
done

mr_avg=$(calc "$mr_cpu / $rounds")
perf_avg=$(calc "$perf_cpu / $rounds")
echo "| measure | moonrover | perf record + stackcollapse |"
echo "|---|---|---|"
echo "| CPU time per ${seconds} s profile (mean of $rounds) | ${mr_avg} s | ${perf_avg} s |"
echo "| share of one core while profiling | $(calc "100 * $mr_avg / $seconds")% | $(calc "100 * $perf_avg / $seconds")% |"
echo "| peak RSS | $((mr_rss / 1024)) MiB | |"
echo "| start to first sample | ${first_ms[*]} ms | |"
echo
echo "ratio moonrover/perf CPU time: $(calc "$mr_avg / $perf_avg")"
