#!/usr/bin/env bash
# Cost of record --off-cpu under a context-switch storm: two processes
# ping-pong one byte over pipes (tests/programs/ptt_pingpong.c), every round
# trip four context switches of targeted threads. Each round runs the workload
# under `arcprof record --no-off-cpu` and `--off-cpu`, alternating, and, when
# libbpf-tools is installed, under libbpf-tools' offcputime (plain run while it
# traces the machine) next to a plain run. Slowdown = 1 - median(rate with) /
# median(rate without). Budget: 5%.
# Usage: bench/offcpu_overhead.sh [BUILD_DIR] [ROUNDS] [ROUND_TRIPS]
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
trips=${3:-100000}
arcprof=$build/arcprof
pingpong=$build/tests/programs/ptt_pingpong
offcputime=/usr/sbin/offcputime
for f in "$arcprof" "$pingpong"; do
  [ -x "$f" ] || { echo "offcpu_overhead: $f missing: build first (cmake --build $build)" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/arcprof-offcpu-bench.XXXXXX)
tool_pid=
cleanup() { [ -n "$tool_pid" ] && kill "$tool_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

rate() { sed -n 's/.*ptt_pingpong .* rate=\([0-9.]*\) .*/\1/p'; }
recorded() { "$arcprof" record -q --no-ptt "$@" -o "$tmp/c.db" -- "$pingpong" "$trips" 2>&1 | rate; }
plain() { "$pingpong" "$trips" 2>&1 | rate; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (1 - b / a) * 100}'; }

without=() with=() bare=() tool=()
have_tool=0
[ -x "$offcputime" ] && have_tool=1
for ((i = 0; i < rounds; i++)); do
  without+=("$(recorded --no-off-cpu)")
  with+=("$(recorded --off-cpu)")
  if ((have_tool)); then
    bare+=("$(plain)")
    "$offcputime" -u >/dev/null 2>&1 &
    tool_pid=$!
    sleep 2  # loaded and attached
    tool+=("$(plain)")
    kill -INT "$tool_pid"; wait "$tool_pid" 2>/dev/null || true; tool_pid=
  fi
done
m_without=$(printf '%s\n' "${without[@]}" | median)
m_with=$(printf '%s\n' "${with[@]}" | median)
slowdown=$(pct "$m_without" "$m_with")
echo "offcpu_overhead: pipe ping-pong, $trips round trips x $rounds runs each, alternating"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes single runs vary)"
echo "  record --no-off-cpu: ${without[*]} round trips/s (median $m_without)"
echo "  record --off-cpu:    ${with[*]} round trips/s (median $m_with)"
echo "  --off-cpu slowdown: ${slowdown}% (budget 5%)"
if ((have_tool)); then
  m_bare=$(printf '%s\n' "${bare[@]}" | median)
  m_tool=$(printf '%s\n' "${tool[@]}" | median)
  echo "  no profiler:         ${bare[*]} round trips/s (median $m_bare)"
  echo "  under offcputime -u: ${tool[*]} round trips/s (median $m_tool)"
  echo "  offcputime slowdown: $(pct "$m_bare" "$m_tool")% (whole machine, for comparison)"
fi
awk -v s="$slowdown" 'BEGIN {exit !(s <= 5.0)}' || { echo "offcpu_overhead: over budget" >&2; exit 1; }
