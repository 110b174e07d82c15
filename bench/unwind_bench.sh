#!/usr/bin/env bash
# Unwinding benchmarks (issue 3), side by side with perf in one run:
#  1. stack completeness of python3, gzip and qsort-through-libc for arcprof
#     fp/dwarf/hybrid vs `perf record -g` and `perf record --call-graph dwarf`,
#     with capture bytes per sample;
#  2. slowdown of a CPU-bound workload (both CPUs) at 999 Hz: arcprof hybrid vs
#     perf --call-graph dwarf, and arcprof's unwind cost per sample.
# Usage: bench/unwind_bench.sh BUILD_DIR (as root). Prints markdown.
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof="$build/arcprof"
out=$(mktemp -d /tmp/arcprof-unwind-XXXXXX)
trap 'rm -rf "$out"' EXIT
head -c 40M /dev/urandom | base64 > "$out/input.txt"

python_cmd=(/usr/bin/python3 -c "
import time
def f(n):
    s = 0
    for i in range(n): s += i * i
    return s
t = time.time()
while time.time() - t < 3: f(100000)")
gzip_cmd=(/usr/bin/gzip -c -9 "$out/input.txt")
qsort_cmd=("$build/tests/programs/qsort_cmp" 3)

# Share of samples of COMM whose outermost user frame is where a thread starts
# (bench/thread_start.sh; perf's stacks below are judged by the same roots).
. "$(dirname "$0")/thread_start.sh"
roots='^(_start|__libc_start_main[^;]*|__libc_start_call_main|start_thread|clone3?|__clone3?)$'
arc_complete() {  # db comm
  thread_start_share "$arcprof" "$1" "$2" | awk '{printf "%.1f", $1}'
}
perf_complete() {  # perf.data comm
  perf script -i "$1" -F comm,ip,sym --comm "$2" 2>/dev/null |
    awk -v re="$roots" '
      /^[^ \t]/ {if (have) {t++; if (last ~ re || (last ~ /^\[unknown\]$/ && prev ~ re)) c++} have=1; last=""; prev=""; next}
      NF {prev=last; last=$2; sub(/\+0x[0-9a-f]+$/, "", last)}
      END {if (have) {t++; if (last ~ re) c++} printf "%.1f", t ? 100*c/t : 0}'
}
samples_of() { perf script -i "$1" -F comm 2>/dev/null | grep -c . || true; }

echo "## stack completeness (% of samples reaching thread start) and bytes per sample"
echo "| workload | arcprof fp | arcprof dwarf | arcprof hybrid | perf -g | perf --call-graph dwarf |"
echo "|---|---|---|---|---|---|"
for w in python gzip qsort; do
  case $w in
    python) cmd=("${python_cmd[@]}"); comm=python3 ;;
    gzip) cmd=("${gzip_cmd[@]}"); comm=gzip ;;
    qsort) cmd=("${qsort_cmd[@]}"); comm=qsort_cmp ;;
  esac
  row="| $w"
  for m in fp dwarf hybrid; do
    "$arcprof" record -q --call-graph $m -o "$out/$w-$m.db" -- "${cmd[@]}" > /dev/null
    n=$(sqlite3 "$out/$w-$m.db" "select sum(base) from nodes")
    bytes=$(stat -c %s "$out/$w-$m.db")
    row="$row | $(arc_complete "$out/$w-$m.db" $comm)% ($(awk -v b="$bytes" -v n="$n" 'BEGIN {printf "%.0f", b/n}') B/sample)"
  done
  for g in "-g" "--call-graph dwarf"; do
    perf record -q -F 999 $g -o "$out/$w.perf" -- "${cmd[@]}" > /dev/null 2>&1
    n=$(samples_of "$out/$w.perf")
    bytes=$(stat -c %s "$out/$w.perf")
    row="$row | $(perf_complete "$out/$w.perf" $comm)% ($(awk -v b="$bytes" -v n="$n" 'BEGIN {printf "%.0f", b/n}') B/sample)"
  done
  echo "$row |"
done
echo

# Slowdown, both CPUs busy, 999 Hz, whole machine.
work="$build/bench/cpu_workload"
mega=${MEGA:-20000}
ncpu=$(nproc)
run_workload() {
  local pids=()
  for i in $(seq "$ncpu"); do "$work" "$mega" > "$out/w$i" & pids+=($!); done
  wait "${pids[@]}"
  cat "$out"/w* | awk '{s+=$1} END {printf "%.4f\n", s/NR}'
}
base=$(run_workload)
perf record -q -F 999 -a --call-graph dwarf -o "$out/sys.perf" -- sleep 600 > /dev/null 2>&1 &
ppid=$!; sleep 1
perf_t=$(run_workload)
kill -INT $ppid; wait $ppid || true
perf_bytes=$(stat -c %s "$out/sys.perf")
"$arcprof" record -q --call-graph hybrid -o "$out/sys.db" > /dev/null 2>&1 &
apid=$!; sleep 1
t0=$(date +%s.%N); ticks0=$(awk '{print $14+$15}' /proc/$apid/stat)
arc_t=$(run_workload)
t1=$(date +%s.%N); ticks1=$(awk '{print $14+$15}' /proc/$apid/stat)
kill -INT $apid; wait $apid || true
echo "## slowdown at 999 Hz, $ncpu CPUs busy (same run)"
echo "| run | workload s | slowdown |"
echo "|---|---|---|"
echo "| no profiler | $base | - |"
echo "| perf record -a --call-graph dwarf | $perf_t | $(awk -v x="$perf_t" -v y="$base" 'BEGIN {printf "%.2f%%", 100*(x/y-1)}') |"
echo "| arcprof record (hybrid) | $arc_t | $(awk -v x="$arc_t" -v y="$base" 'BEGIN {printf "%.2f%%", 100*(x/y-1)}') |"
echo
echo "arcprof's own CPU while the workload ran: $(awk -v a="$ticks0" -v b="$ticks1" -v s="$t0" -v e="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f%% of one CPU", 100*(b-a)/hz/(e-s)}')"
sqlite3 "$out/sys.db" "select
  printf('unwind cost: %.2f us per unwound sample (%d samples); all processing: %.2f us per sample',
    (select value from counters where name='unwind_ns') / 1000.0 / max(1,(select value from counters where name='unwound_samples')),
    (select value from counters where name='unwound_samples'),
    (select value from counters where name='processing_ns') / 1000.0 / max(1,(select value from counters where name='samples_total')))"
echo "perf.data with --call-graph dwarf: $perf_bytes bytes; arcprof capture: $(stat -c %s "$out/sys.db") bytes"
