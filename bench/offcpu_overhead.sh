#!/usr/bin/env bash
# Cost of record --off-cpu under a context-switch storm: two processes
# ping-pong one byte over pipes (tests/programs/ptt_pingpong.c). Each round
# runs the workload under `arcprof record --no-off-cpu` and `--off-cpu`,
# alternating, and, when libbpf-tools is installed, under libbpf-tools'
# offcputime (plain run while it traces the machine) next to a plain run.
# Slowdown = 1 - median(rate with) / median(rate without). Budget: 5%.
#
# PIN places the two processes (ptt_pingpong's second argument):
#   same   both on CPU 0 (default): every round trip is two switches between
#          the two recorded processes and the rate is bound by CPU, so the
#          cost of each switch is on the critical path: the worst case.
#   split  CPU 0 and CPU 1: four switches to and from idle per round trip,
#          bound by the latency of waking an idle CPU.
#   none   the scheduler decides; it picks either placement, and the rate
#          differs about threefold between them, so medians of few runs mix
#          two distributions (see docs/performance.md, "Off-CPU time").
# The ping-pong runs SCHED_FIFO (chrt -f 10; RT=0 turns that off): pinned to a
# CPU that other work also wants, a normal-priority ping-pong measures how much
# of that CPU it gets (runs varied from 45,000 to 155,000 round trips/s at
# load 17); at real-time priority the same runs stay within 4% of each other,
# and the kernel's real-time throttling still leaves 5% of the CPU to others.
# At the end one more --off-cpu run with kernel.bpf_stats_enabled=1 gives the
# sched_switch program's own run time per switch (bpftool), all switches of
# the machine included.
# PYTHON=INTERPRETER: the same ping-pong in Python (bench/workloads/
# python_pingpong.py) instead: every thread going off CPU has Python frames,
# which --off-cpu reads at each switch (the interpreter walk of the sampler;
# docs/performance.md "Off-CPU time"), where the C ping-pong has none.
# ANCHOR=ARCPROF: another build's arcprof, run in every round right after this
# build's two runs (its own --no-off-cpu and --off-cpu), so both builds' slowdowns
# come from the same minutes of a busy machine. TOOL=0 skips offcputime.
# Usage: bench/offcpu_overhead.sh [BUILD_DIR] [ROUNDS] [ROUND_TRIPS] [PIN]
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
trips=${3:-100000}
pin=${4:-same}
arcprof=$build/arcprof
pingpong=$build/tests/programs/ptt_pingpong
offcputime=/usr/sbin/offcputime
for f in "$arcprof" "$pingpong"; do
  [ -x "$f" ] || { echo "offcpu_overhead: $f missing: build first (cmake --build $build)" >&2; exit 1; }
done
workload=("$pingpong")
if [ -n "${PYTHON:-}" ]; then
  [ -x "$PYTHON" ] || { echo "offcpu_overhead: PYTHON=$PYTHON is not an executable" >&2; exit 1; }
  workload=("$PYTHON" "$(dirname "$0")/workloads/python_pingpong.py")
fi
case $pin in
  same | split) pin_arg=$pin ;;
  none) pin_arg= ;;
  *) echo "offcpu_overhead: PIN must be same, split or none, not $pin" >&2; exit 2 ;;
esac
rt=()
if [ "${RT:-1}" != 0 ] && command -v chrt >/dev/null; then rt=(chrt -f 10); fi
tmp=$(mktemp -d /tmp/arcprof-offcpu-bench.XXXXXX)
tool_pid= stats_was=
cleanup() {
  [ -n "$tool_pid" ] && kill "$tool_pid" 2>/dev/null
  [ -n "$stats_was" ] && sysctl -q kernel.bpf_stats_enabled="$stats_was"
  rm -rf "$tmp"
}
trap cleanup EXIT

# "RATE CPU_NS_PER_TRIP" of one run
fields() { sed -n 's/.*_pingpong .* rate=\([0-9.]*\) cpu_ns_per_trip=\([0-9.]*\).*/\1 \2/p'; }
anchor=${ANCHOR:-}
recorded() { "$arcprof" record -q --no-ptt "$@" -o "$tmp/c.db" -- "${rt[@]}" "${workload[@]}" "$trips" $pin_arg 2>&1 | fields; }
recorded_anchor() { "$anchor" record -q --no-ptt "$@" -o "$tmp/c.db" -- "${rt[@]}" "${workload[@]}" "$trips" $pin_arg 2>&1 | fields; }
plain() { "${rt[@]}" "${workload[@]}" "$trips" $pin_arg 2>&1 | fields; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
range() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (1 - b / a) * 100}'; }

without=() with=() c_without=() c_with=() bare=() tool=() a_without=() a_with=()
have_tool=0
[ -x "$offcputime" ] && [ "${TOOL:-1}" != 0 ] && have_tool=1
for ((i = 0; i < rounds; i++)); do
  read -r r c <<<"$(recorded --no-off-cpu)"; without+=("$r"); c_without+=("$c")
  read -r r c <<<"$(recorded --off-cpu)"; with+=("$r"); c_with+=("$c")
  if [ -n "$anchor" ]; then
    read -r r c <<<"$(recorded_anchor --no-off-cpu)"; a_without+=("$r")
    read -r r c <<<"$(recorded_anchor --off-cpu)"; a_with+=("$r")
  fi
  if ((have_tool)); then
    read -r r c <<<"$(plain)"; bare+=("$r")
    "$offcputime" -u >/dev/null 2>&1 &
    tool_pid=$!
    sleep 2  # loaded and attached
    read -r r c <<<"$(plain)"; tool+=("$r")
    kill -INT "$tool_pid"; wait "$tool_pid" 2>/dev/null || true; tool_pid=
  fi
done

# The program's own cost per switch: one more run with BPF run-time stats.
per_switch=unknown
if command -v bpftool >/dev/null; then
  stats_was=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -q kernel.bpf_stats_enabled=1
  # Ours is the on_switch program that appears with this recording: other
  # recordings on the machine may have their own.
  switch_ids() { { bpftool prog show name on_switch 2>/dev/null || true; } | sed -n 's/^\([0-9]*\): .*/\1/p' | sort; }
  ids_before=$(switch_ids)
  # long enough to still switch 2 s after the start
  "$arcprof" record -q --no-ptt --off-cpu -o "$tmp/s.db" -- "${rt[@]}" "${workload[@]}" $((trips * 10)) $pin_arg \
    >/dev/null 2>&1 &
  rec=$!
  sleep 1  # loaded, attached and switching
  ours=$(comm -13 <(echo "$ids_before") <(switch_ids) | head -1)
  snap() {
    [ -n "$ours" ] || return 0
    bpftool prog show id "$ours" 2>/dev/null |
      sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p' | head -1 || true
  }
  s1=$(snap); sleep 1; s2=$(snap)
  kill -TERM "$rec" 2>/dev/null || true  # (SIGINT is ignored by background jobs)
  wait "$rec" || true
  sysctl -q kernel.bpf_stats_enabled="$stats_was"; stats_was=
  if [ -n "$s1" ] && [ -n "$s2" ]; then
    per_switch=$(awk -v a="$s1" -v b="$s2" 'BEGIN {split(a, x); split(b, y); n = y[2] - x[2];
      if (n > 0) printf "%.0f ns over %d switches", (y[1] - x[1]) / n, n; else print "unknown"}')
  fi
fi

m_without=$(printf '%s\n' "${without[@]}" | median)
m_with=$(printf '%s\n' "${with[@]}" | median)
cm_without=$(printf '%s\n' "${c_without[@]}" | median)
cm_with=$(printf '%s\n' "${c_with[@]}" | median)
slowdown=$(pct "$m_without" "$m_with")
echo "offcpu_overhead: pipe ping-pong (${workload[*]##*/}), $trips round trips x $rounds runs each, alternating, pinning: $pin${rt:+, SCHED_FIFO}"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes single runs vary)"
echo "  record --no-off-cpu: median $m_without round trips/s (range $(printf '%s\n' "${without[@]}" | range)), CPU per round trip $cm_without ns"
echo "  record --off-cpu:    median $m_with round trips/s (range $(printf '%s\n' "${with[@]}" | range)), CPU per round trip $cm_with ns"
echo "  --off-cpu slowdown: ${slowdown}% (budget 5%); CPU per round trip $(awk -v a="$cm_without" -v b="$cm_with" 'BEGIN {printf "%+.2f", (b / a - 1) * 100}')%"
echo "  sched_switch program (kernel.bpf_stats_enabled=1): $per_switch"
if [ -n "$anchor" ]; then
  am_without=$(printf '%s\n' "${a_without[@]}" | median)
  am_with=$(printf '%s\n' "${a_with[@]}" | median)
  echo "  anchor $anchor, same rounds:"
  echo "  record --no-off-cpu: median $am_without round trips/s (range $(printf '%s\n' "${a_without[@]}" | range))"
  echo "  record --off-cpu:    median $am_with round trips/s (range $(printf '%s\n' "${a_with[@]}" | range))"
  echo "  anchor --off-cpu slowdown: $(pct "$am_without" "$am_with")%"
fi
if ((have_tool)); then
  m_bare=$(printf '%s\n' "${bare[@]}" | median)
  m_tool=$(printf '%s\n' "${tool[@]}" | median)
  echo "  no profiler:         median $m_bare round trips/s (range $(printf '%s\n' "${bare[@]}" | range))"
  echo "  under offcputime -u: median $m_tool round trips/s (range $(printf '%s\n' "${tool[@]}" | range))"
  echo "  offcputime slowdown: $(pct "$m_bare" "$m_tool")% (whole machine, for comparison)"
fi
awk -v s="$slowdown" 'BEGIN {exit !(s <= 5.0)}' || { echo "offcpu_overhead: over budget" >&2; exit 1; }
