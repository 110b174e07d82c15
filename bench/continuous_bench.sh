#!/usr/bin/env bash
# Continuous capture over a mixed workload: arcprof continuous (49 Hz, 60 s
# windows, PTT on) and, in the same run for scale, perf record -a -g -F 49.
# Reports each tool's CPU (% of one CPU, from /proc/PID/stat), arcprof's RSS
# over time (CSV + SVG plot) and the bytes per hour each writes.
# Workload: a CPU-bound C loop, python3, gzip, and ~20 short processes a second.
# Usage: bench/continuous_bench.sh [BUILD_DIR] [SECONDS (default 600; 3600 = the one-hour run)]
set -euo pipefail
build=${1:-build}
seconds=${2:-${ARCPROF_CONTINUOUS_BENCH_S:-600}}
arcprof=$build/arcprof
workload=$build/bench/cpu_workload
for f in "$arcprof" "$workload"; do
  [ -x "$f" ] || { echo "continuous_bench: $f missing: build first (cmake --build $build)" >&2; exit 1; }
done
out=${ARCPROF_BENCH_OUT:-$build/bench-results}
mkdir -p "$out"
tmp=$(mktemp -d /tmp/arcprof-continuous-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The workload, niced so the tools measured are not starved.
(while :; do nice -n 5 "$workload" 2000 >/dev/null; done) & pids+=($!)
(while :; do nice -n 5 python3 -c 'sum(i*i for i in range(3000000))'; done) & pids+=($!)
(while :; do head -c 20000000 /dev/urandom | nice -n 5 gzip -1 >/dev/null; done) & pids+=($!)
(while :; do for i in $(seq 20); do /bin/true; done; sleep 1; done) & pids+=($!)

"$arcprof" continuous --store "$tmp/store" --window 60s --no-java 2>"$tmp/arcprof.log" & arc=$!
pids+=($arc)
have_perf=0
if command -v perf >/dev/null; then
  perf record -q -a -g -F 49 -o "$tmp/perf.data" 2>"$tmp/perf.log" & perfpid=$!
  pids+=($perfpid)
  have_perf=1
fi
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
start=$(date +%s.%N)
echo "seconds,rss_kb,cpu_ticks" >"$out/continuous_rss.csv"
elapsed=0
while (( elapsed < seconds )); do
  sleep 10
  elapsed=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN {printf "%d", n - s}')
  echo "$elapsed,$(rss_kb $arc),$(cpu_ticks $arc)" >>"$out/continuous_rss.csv"
done
arc_ticks=$(cpu_ticks $arc)
perf_ticks=0
[ $have_perf = 1 ] && perf_ticks=$(cpu_ticks $perfpid)
wall=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN {print n - s}')
kill -TERM $arc; wait $arc || true
[ $have_perf = 1 ] && { kill -INT $perfpid; wait $perfpid || true; }

store_bytes=$(du -sb "$tmp/store" | cut -f1)
perf_bytes=0
[ $have_perf = 1 ] && perf_bytes=$(stat -c %s "$tmp/perf.data")
windows=$("$arcprof" store info --store "$tmp/store" --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["windows"]))')
python3 - "$out/continuous_rss.csv" "$out/continuous_rss.svg" <<'PY'
import csv, sys
rows = [(int(r["seconds"]), int(r["rss_kb"]) / 1024) for r in csv.DictReader(open(sys.argv[1]))]
w, h, l, t = 640, 240, 50, 20
xmax = max(s for s, _ in rows) or 1
ymax = max(20, max(m for _, m in rows) * 1.2)
pts = " ".join(f"{l + (w - l - 10) * s / xmax:.1f},{t + (h - t - 30) * (1 - m / ymax):.1f}" for s, m in rows)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
       f'<rect width="{w}" height="{h}" fill="white"/>',
       f'<text x="{w/2}" y="14" text-anchor="middle">arcprof continuous RSS (MiB) over {xmax} s</text>',
       f'<line x1="{l}" y1="{h-30}" x2="{w-10}" y2="{h-30}" stroke="#888"/>',
       f'<line x1="{l}" y1="{t}" x2="{l}" y2="{h-30}" stroke="#888"/>',
       f'<text x="{l-4}" y="{t+4}" text-anchor="end">{ymax:.0f}</text>',
       f'<text x="{l-4}" y="{h-30}" text-anchor="end">0</text>',
       f'<text x="{w-10}" y="{h-14}" text-anchor="end">{xmax} s</text>',
       f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{pts}"/>', '</svg>']
open(sys.argv[2], "w").write("\n".join(svg) + "\n")
PY
awk -v w="$wall" -v a="$arc_ticks" -v p="$perf_ticks" -v hz="$hz" -v sb="$store_bytes" -v pb="$perf_bytes" \
    -v win="$windows" -v hp="$have_perf" -v csv="$out/continuous_rss.csv" 'BEGIN {
  ac = a / hz / w * 100; pc = p / hz / w * 100
  printf "continuous_bench: %.0f s, mixed workload (C loop, python3, gzip, 20 processes/s), load average %s\n", w, "'"$(cut -d' ' -f1-3 /proc/loadavg)"'"
  printf "  arcprof continuous -F 49 --window 60s: CPU %.3f%% of one CPU, %d windows, store %.1f MiB/hour\n", ac, win, sb / w * 3600 / 1048576
  if (hp) printf "  perf record -a -g -F 49:               CPU %.3f%% of one CPU, %.1f MiB/hour; arcprof/perf CPU ratio %.2f\n", pc, pb / w * 3600 / 1048576, (pc > 0 ? ac / pc : 0)
  printf "  RSS over time: %s (plot: continuous_rss.svg)\n", csv
}'
awk -F, 'NR == 2 {first = $2} NR > 1 {if ($2 > max) max = $2; last = $2} END {
  printf "  arcprof RSS: %.1f MiB after 10 s, %.1f MiB at the end, %.1f MiB peak\n", first / 1024, last / 1024, max / 1024 }' "$out/continuous_rss.csv"
# A daemon runs for days: its start (loading the programs, reading /proc and
# kallsyms, the first symbol tables) is paid once. The figure after the first
# 10 s is what each further hour costs, window closes included.
awk -F, -v a="$arc_ticks" -v w="$wall" -v hz="$hz" 'NR == 2 {s = $1; t = $3} END {
  if (w > s) printf "  arcprof CPU after the first %d s (start excluded, window closes included): %.3f%% of one CPU; the start took %.2f s of CPU\n", s, (a - t) / hz / (w - s) * 100, t / hz }' "$out/continuous_rss.csv"
