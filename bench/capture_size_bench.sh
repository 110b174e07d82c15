#!/usr/bin/env bash
# Capture size, side by side with perf on the same execution: each workload
# runs once under `arcprof record -- perf record -F 999 -g -- CMD`, so both
# tools sample the very same run (arcprof also sees perf itself, a few
# samples). Prints a markdown table of bytes per sample: arcprof's capture
# (current schema), perf.data with frame-pointer call graphs, and perf.data
# with `--call-graph dwarf` from a second run of the same command (perf only;
# PERF_DWARF=0 skips it); and the time of `arcprof report` (median of 5).
# Older schemas are no longer written (their figures stay in
# docs/performance.md, "Capture size").
# Workloads: g++ -O2 of three large test files, xz -9, python3 (compileall,
# ast, json), node with a perf map, a JDK 17 program, sqlite3 with a recursive
# CTE. Only tools scripts/install-deps.sh installs.
# After the table, where each capture's bytes go: bytes per table (and index)
# from SQLite's dbstat, free pages, page size, and the raw vs compressed bytes
# of the frame and tree blocks. The last column is the share of the
# workload's samples whose stack reaches thread start; the truncated ones are
# listed by reason after the table.
# Usage: bench/capture_size_bench.sh [BUILD_DIR]   (as root; SECONDS_PER_WORKLOAD=N, default 15;
#        PERF_DWARF=0 skips the perf --call-graph dwarf runs;
#        KEEP_CAPTURES=DIR keeps the captures; WORKLOADS="gxx xz" runs only those)
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof=$build/arcprof
counters=$build/bench/capture_counters
src=$(cd "$(dirname "$0")/.." && pwd)
seconds=${SECONDS_PER_WORKLOAD:-15}  # of CPU per workload, so samples do not depend on load
for f in "$arcprof" "$counters"; do
  [ -x "$f" ] || { echo "capture_size_bench: $f missing: build first (cmake --build $build)" >&2; exit 1; }
done
if [ "$(id -u)" -ne 0 ]; then
  echo "capture_size_bench: records with BPF: run as root" >&2
  exit 1
fi
command -v perf >/dev/null || { echo "capture_size_bench: perf missing (scripts/install-deps.sh)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/arcprof-capture-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
java17=/usr/lib/jvm/java-17-openjdk-amd64/bin

# Inputs prepared outside the recordings.
# xz -9 compresses about 2 MB of this input per CPU second here (measured: 3.3 MB took
# 1.75 s of samples): SECONDS_PER_WORKLOAD of work.
cat /usr/lib/jvm/java-17-openjdk-amd64/lib/modules /usr/lib/x86_64-linux-gnu/lib*.so* 2>/dev/null |
  head -c $((seconds * 2000 * 1024)) > "$tmp/xz-input" || true
"$java17/javac" -d "$tmp/java" "$src/bench/workloads/CaptureBench.java"
mkdir -p "$tmp/py"
# The recursive CTE's row count grows with SECONDS_PER_WORKLOAD (about 1.2M rows a second here).
rows=$((seconds * 1200000))
# Three test sources with heavy headers (gtest, nlohmann/json, the STL).
gxx_files=(tests/reports/arcflow_test.cpp tests/store/capture_store_test.cpp tests/reports/export_test.cpp)

declare -A cmd
cmd[gxx]="cd $src && for f in ${gxx_files[*]}; do g++ -O2 -std=c++20 -I. -w -c \$f -o /dev/null; done"
cmd[xz]="xz -9 -T1 -c $tmp/xz-input > /dev/null"
cmd[python3]="/usr/bin/python3 $src/bench/workloads/python_workload.py $tmp/py $seconds > /dev/null"
cmd[node]="cd $tmp && node --perf-basic-prof $src/bench/workloads/node_workload.js $seconds > /dev/null"
cmd[java]="$java17/java -XX:+PreserveFramePointer -cp $tmp/java CaptureBench $seconds > /dev/null"
cmd[sqlite3]="sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $rows) SELECT sum(x) FROM c;' > /dev/null"
order=(${WORKLOADS:-gxx xz python3 node java sqlite3})

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
report_s() {  # median wall seconds of `arcprof report -i $1`
  local t=()
  for _ in 1 2 3 4 5; do
    local s e
    s=$(date +%s.%N)
    "$arcprof" report -i "$1" > /dev/null
    e=$(date +%s.%N)
    t+=("$(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f", e - s}')")
  done
  median "${t[@]}"
}
per() { awk -v b="$1" -v n="$2" 'BEGIN {if (n > 0) printf "%.1f", b / n; else print "-"}'; }
# The workload's process, for the share of its samples that reach thread start.
declare -A comm=([gxx]=cc1plus [xz]=xz [python3]=python3 [node]=node [java]=java [sqlite3]=sqlite3)
. "$src/bench/thread_start.sh"
start_share() {  # capture comm
  thread_start_share "$arcprof" "$1" "$2" | awk '{if ($2 > 0) printf "%.2f%% of %d", $1, $2; else print "-"}'
}
truncations=()

echo "## Capture size: bytes per sample, arcprof vs perf -g on the same execution (999 Hz)"
echo
echo "| workload | samples (arcprof) | arcprof B/sample | samples (perf) | perf -g B/sample | perf dwarf B/sample (samples) | report s | arcprof: reach thread start |"
echo "|---|---|---|---|---|---|---|---|"
for w in "${order[@]}"; do
  a=$tmp/$w.db p=$tmp/$w.perf.data
  if ! "$arcprof" record -q -o "$a" -- perf record -q -F 999 -g -o "$p" -- sh -c "${cmd[$w]}" \
       > "$tmp/$w.log" 2>&1; then
    echo "| $w | failed: $(tail -1 "$tmp/$w.log") | | | | | | |"
    continue
  fi
  # Counters live in row blocks, which the sqlite3 shell cannot read.
  "$counters" "$a" > "$tmp/$w.counters"
  a_samples=$(awk -F'\t' '$1 == "samples_total" {print $2}' "$tmp/$w.counters")
  truncations+=("$w: $(awk -F'\t' 'index($1, "truncated_stacks.") == 1 {s = s (s ? ", " : "") substr($1, 18) " " $2}
                                END {print (s ? s : "none")}' "$tmp/$w.counters")")
  a_bytes=$(stat -c %s "$a")
  p_samples=$(perf report -i "$p" --stats 2>/dev/null | awk '/SAMPLE events/ {print $3; exit}')
  p_bytes=$(stat -c %s "$p")
  rm -f "$p"
  dwarf="not run"
  if [ "${PERF_DWARF:-1}" != 0 ]; then
    d=$tmp/$w.dwarf.data
    # perf's exit status is the command's: the file is what counts.
    perf record -q -F 999 --call-graph dwarf -o "$d" -- sh -c "${cmd[$w]}" > "$tmp/$w.dwarf.log" 2>&1 || true
    if [ -s "$d" ]; then
      d_samples=$(perf report -i "$d" --stats 2>/dev/null | awk '/SAMPLE events/ {print $3; exit}')
      d_bytes=$(stat -c %s "$d")
      dwarf="$(per "$d_bytes" "${d_samples:-0}") (${d_samples:-?})"
    else
      dwarf="failed"
    fi
    rm -f "$d"
  fi
  r=$(report_s "$a")
  echo "| $w | $a_samples | **$(per "$a_bytes" "$a_samples")** ($a_bytes B) | ${p_samples:-?} | $(per "$p_bytes" "${p_samples:-0}") ($p_bytes B) | $dwarf | $r | $(start_share "$a" "${comm[$w]}") (${comm[$w]}) |"
  [ -n "${KEEP_CAPTURES:-}" ] && mkdir -p "$KEEP_CAPTURES" && cp "$a" "$KEEP_CAPTURES/"
done

echo
echo "Truncated stacks by reason (every process of the run, perf and sh included):"
for t in "${truncations[@]}"; do echo "- $t"; done
echo
echo "## Where the bytes go (dbstat: bytes per table or index, pages included)"
echo
for w in "${order[@]}"; do
  a=$tmp/$w.db
  [ -f "$a" ] || continue
  echo "- **$w** ($(stat -c %s "$a") B, page size $(sqlite3 "$a" 'PRAGMA page_size'),"\
       "$(sqlite3 "$a" 'PRAGMA freelist_count') free pages):" \
       "$(sqlite3 "$a" "SELECT group_concat(name || ' ' || bytes, ', ') FROM
           (SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC)")"
  for t in frame_blocks tree_blocks row_blocks; do
    echo "  - $t: $(sqlite3 "$a" "SELECT count(*) || ' blocks, ' || coalesce(sum(raw_bytes), 0) || ' B raw, ' ||
                                  coalesce(sum(length(data)), 0) || ' B compressed' FROM $t" 2>/dev/null || echo -)"
  done
done
echo
echo "arcprof records with its defaults for a command (hybrid unwinding, off-CPU stacks, no PTT);"
echo "perf record -F 999 -g keeps raw frame-pointer stacks. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
