#!/usr/bin/env bash
# PTT overhead on a context-switch-heavy workload: two processes ping-pong one
# byte over pipes (tests/programs/ptt_pingpong.c). Each round records the same
# workload with --no-ptt and with --ptt, alternating, in the same run; the
# slowdown is 1 - median(rate with --ptt) / median(rate without). Budget: 3%.
# Usage: bench/ptt_overhead.sh [BUILD_DIR] [ROUNDS] [ROUND_TRIPS]
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
trips=${3:-100000}
arcprof=$build/arcprof
pingpong=$build/tests/programs/ptt_pingpong
for f in "$arcprof" "$pingpong"; do
  [ -x "$f" ] || { echo "ptt_overhead: $f missing: build first (cmake --build $build)" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/arcprof-ptt-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

run() {  # one recorded run: "RATE CPU_NS_PER_TRIP"
  "$arcprof" record -q "$@" -o "$tmp/c.db" -- "$pingpong" "$trips" 2>&1 |
    sed -n 's/.*ptt_pingpong .* rate=\([0-9.]*\) cpu_ns_per_trip=\([0-9.]*\).*/\1 \2/p'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

without=() with=() cpu_without=() cpu_with=()
for ((i = 0; i < rounds; i++)); do
  read -r r c <<<"$(run --no-ptt)"; without+=("$r"); cpu_without+=("$c")
  read -r r c <<<"$(run --ptt)"; with+=("$r"); cpu_with+=("$c")
done
m_without=$(printf '%s\n' "${without[@]}" | median)
m_with=$(printf '%s\n' "${with[@]}" | median)
c_without=$(printf '%s\n' "${cpu_without[@]}" | median)
c_with=$(printf '%s\n' "${cpu_with[@]}" | median)
slowdown=$(awk -v a="$m_without" -v b="$m_with" 'BEGIN {printf "%.2f", (1 - b / a) * 100}')
cpu_cost=$(awk -v a="$c_without" -v b="$c_with" 'BEGIN {printf "%.2f", (b / a - 1) * 100}')
echo "ptt_overhead: pipe ping-pong, $trips round trips x $rounds runs each, alternating"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes single runs vary)"
echo "  without --ptt: ${without[*]} round trips/s (median $m_without)"
echo "  with    --ptt: ${with[*]} round trips/s (median $m_with)"
echo "  CPU per round trip (both processes): median $c_without ns without, $c_with ns with (+${cpu_cost}%)"
echo "  slowdown: ${slowdown}% (budget 3%)"
awk -v s="$slowdown" 'BEGIN {exit !(s <= 3.0)}' || { echo "ptt_overhead: over budget" >&2; exit 1; }
