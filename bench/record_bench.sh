#!/usr/bin/env bash
# Foundation benchmarks, side by side with perf in one run:
#  1. slowdown of a CPU-bound workload (both CPUs busy) under `arcprof record`
#     vs under `perf record -F 999 -a -g`, and arcprof's own CPU time;
#  2. `arcprof report` vs `perf report --stdio` on ~1M samples of the same workload;
#  3. capture bytes per sample.
# Usage: bench/record_bench.sh BUILD_DIR   (as root). Prints a markdown summary.
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof="$build/arcprof"
work="$build/bench/cpu_workload"
out=$(mktemp -d /tmp/arcprof-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT
ncpu=$(nproc)
mega=${MEGA:-30000}
rounds=${ROUNDS:-3}

# Runs one copy of the workload per CPU; prints the mean wall seconds.
run_workload() {
  local pids=() f
  for i in $(seq "$ncpu"); do "$work" "$mega" > "$out/w$i" & pids+=($!); done
  wait "${pids[@]}"
  cat "$out"/w* | awk '{s+=$1} END {printf "%.4f\n", s/NR}'
}

# Median of the arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

base=() perf_t=() arc_t=() arc_cpu=() start_ticks=()
for r in $(seq "$rounds"); do
  base+=("$(run_workload)")

  perf record -F 999 -a -g -o "$out/perf.data" -q -- sleep 600 > /dev/null 2>&1 &
  ppid=$!; sleep 1
  perf_t+=("$(run_workload)")
  kill -INT $ppid; wait $ppid || true

  "$arcprof" record -q -o "$out/arc.db" > /dev/null 2>&1 &
  apid=$!; sleep 1
  # arcprof's own CPU time (utime+stime, clock ticks) while the workload ran;
  # start-up (kallsyms, the /proc snapshot) is reported separately below.
  start_ticks+=("$(awk '{print $14+$15}' /proc/$apid/stat)")
  t0=$(date +%s.%N); ticks0=$(awk '{print $14+$15}' /proc/$apid/stat)
  arc_t+=("$(run_workload)")
  t1=$(date +%s.%N); ticks1=$(awk '{print $14+$15}' /proc/$apid/stat)
  kill -INT $apid; wait $apid || true
  arc_cpu+=("$(awk -v a0="$ticks0" -v a1="$ticks1" -v s="$t0" -v e="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.3f", 100*(a1-a0)/hz/(e-s)}')")
done
b=$(median "${base[@]}"); p=$(median "${perf_t[@]}"); a=$(median "${arc_t[@]}")
slow_perf=$(awk -v x="$p" -v y="$b" 'BEGIN {printf "%.2f", 100*(x/y-1)}')
slow_arc=$(awk -v x="$a" -v y="$b" 'BEGIN {printf "%.2f", 100*(x/y-1)}')

echo "## record overhead ($ncpu CPUs busy, 999 Hz, median of $rounds)"
echo "| run | workload s | slowdown |"
echo "|---|---|---|"
echo "| no profiler | $b | - |"
echo "| perf record -F 999 -a -g | $p | ${slow_perf}% |"
echo "| arcprof record (system-wide, hybrid) | $a | ${slow_arc}% |"
echo
echo "arcprof's own CPU while the workload ran (% of one CPU, per round): ${arc_cpu[*]}"
echo "arcprof's start-up CPU (first second: kallsyms, /proc snapshot), clock ticks of $(getconf CLK_TCK) Hz: ${start_ticks[*]}"
echo

[ -n "${SKIP_1M:-}" ] && exit 0
# ~1M samples: both recorders at 9999 Hz on every CPU over the same workload.
# (The kernel may lower perf_event_max_sample_rate when sampling interrupts take
# too long; both recorders then get fewer samples, the table says how many.)
secs=$(( 1000000 / (9999 * ncpu) + 2 ))
perf record -F 9999 -a -g -o "$out/perf1m.data" -q -- sleep "$secs" > /dev/null 2>&1 &
ppid=$!
"$arcprof" record -q -F 9999 -d "$secs" -o "$out/arc1m.db" > /dev/null 2>&1 &
apid=$!
MEGA=$((mega * 4)) run_workload > /dev/null &
wpid=$!
wait $ppid $apid || true
kill $wpid 2>/dev/null || true; pkill -f "$work" || true; wait 2>/dev/null || true

perf_n=$(perf script -i "$out/perf1m.data" -F period 2>/dev/null | wc -l)
arc_n=$(sqlite3 "$out/arc1m.db" "select sum(base) from nodes")
measure() {  # prints "seconds peak_MiB"
  /usr/bin/time -f "%e %M" "$@" > /dev/null 2> "$out/time.txt" || true
  tail -1 "$out/time.txt" | awk '{printf "%.2f %.0f\n", $1, $2/1024}'
}
# tprof is a flat table: compare with perf's flat report (no call-graph tree,
# which took minutes and over 10 GiB for 1M system-wide -g samples here).
read -r perf_s perf_mb <<< "$(measure timeout 300 perf report --stdio --no-children -g none --sort comm,dso,sym -i "$out/perf1m.data")"
read -r arc_s arc_mb <<< "$(measure "$arcprof" report -i "$out/arc1m.db")"
perf_bytes=$(stat -c %s "$out/perf1m.data")
arc_bytes=$(stat -c %s "$out/arc1m.db")
echo "## report on ~1M samples (9999 Hz x $ncpu CPUs x ${secs}s, recorded side by side)"
echo "| tool | samples | report s | peak MiB | capture bytes | bytes/sample |"
echo "|---|---|---|---|---|---|"
echo "| perf report --stdio --no-children -g none | $perf_n | $perf_s | $perf_mb | $perf_bytes | $(awk -v a="$perf_bytes" -v n="$perf_n" 'BEGIN {printf "%.1f", a/n}') |"
echo "| arcprof report | $arc_n | $arc_s | $arc_mb | $arc_bytes | $(awk -v a="$arc_bytes" -v n="$arc_n" 'BEGIN {printf "%.2f", a/n}') |"
