#!/usr/bin/env bash
# Cost of `arcprof trace` (docs/performance.md "trace"). The program
# tests/programs/trace_target.cpp `bench N` calls bench_root N times, each
# calling the short leaf shared_leaf 100 times, and prints its own ns per
# leaf call. Per round, alternating:
#   plain     the program alone
#   traced    under `arcprof trace --root bench_root` (both functions probed):
#             its ns per leaf call, and what the capture measured per call of
#             shared_leaf (wall / calls), calibrated and with --no-calibration
#   bpftrace  under `bpftrace -e 'uprobe:PROG:shared_leaf { @ = count(); }'`
#             (one entry probe, counting only), when bpftrace is installed
#   outside   the program's `speed` mode (work that calls nothing probed,
#             median chunk time) plain and traced
# Cost per probed call = traced ns per leaf call - plain ns per leaf call.
# Usage: bench/trace_bench.sh [BUILD_DIR] [ROUNDS] [ROOTS]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
ROOTS=${3:-2000}
ARCPROF=$BUILD/arcprof
PROG=$(realpath "$BUILD/tests/programs/trace_target")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

per_call() { sed -n 's/.*ns_per_leaf_call \([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# wall ns per call of shared_leaf in a trace capture (sqlite: value columns).
measured() {
  "$ARCPROF" report -i "$1" --view xprof --metric wall 2>/dev/null | awk '$NF=="shared_leaf" {print $2}' > "$TMP/w"
  "$ARCPROF" report -i "$1" --view xprof --metric calls 2>/dev/null | awk '$NF=="shared_leaf" {print $2}' > "$TMP/c"
  paste "$TMP/w" "$TMP/c" | awk '$2 > 0 {printf "%.1f\n", $1 / $2}'
}

: > "$TMP/plain"; : > "$TMP/traced"; : > "$TMP/uncal"; : > "$TMP/bpftrace"
: > "$TMP/m_cal"; : > "$TMP/m_uncal"; : > "$TMP/out_plain"; : > "$TMP/out_traced"
for r in $(seq "$ROUNDS"); do
  "$PROG" bench "$ROOTS" | per_call >> "$TMP/plain"
  "$ARCPROF" trace -q --root bench_root -o "$TMP/t.db" -- "$PROG" bench "$ROOTS" | per_call >> "$TMP/traced"
  measured "$TMP/t.db" >> "$TMP/m_cal"
  "$ARCPROF" trace -q --no-calibration --root bench_root -o "$TMP/u.db" -- "$PROG" bench "$ROOTS" | per_call >> "$TMP/uncal"
  measured "$TMP/u.db" >> "$TMP/m_uncal"
  if command -v bpftrace >/dev/null; then
    bpftrace -q -e "uprobe:$PROG:shared_leaf { @ = count(); } END { clear(@); }" -c "$PROG bench $ROOTS" 2>/dev/null \
      | per_call >> "$TMP/bpftrace" || true
  fi
  "$PROG" speed 2 20 | sed -n 's/.*median_ns \([0-9]*\).*/\1/p' >> "$TMP/out_plain"
  "$ARCPROF" trace -q --root traced_root -o "$TMP/s.db" -- "$PROG" speed 2 20 \
    | sed -n 's/.*median_ns \([0-9]*\).*/\1/p' >> "$TMP/out_traced"
done
P=$(median < "$TMP/plain"); T=$(median < "$TMP/traced"); U=$(median < "$TMP/uncal")
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "plain ns per leaf call:              $P"
echo "traced ns per leaf call:             $T  (cost per probed call $(awk -v t="$T" -v p="$P" 'BEGIN{printf "%.0f", t-p}') ns, slowdown $(awk -v t="$T" -v p="$P" 'BEGIN{printf "%.1fx", t/p}'))"
echo "traced (--no-calibration) per call:  $U"
echo "measured wall per call, calibrated:   $(median < "$TMP/m_cal") ns"
echo "measured wall per call, uncalibrated: $(median < "$TMP/m_uncal") ns"
if [ -s "$TMP/bpftrace" ]; then
  B=$(median < "$TMP/bpftrace")
  echo "bpftrace count ns per leaf call:     $B  (cost per probed call $(awk -v t="$B" -v p="$P" 'BEGIN{printf "%.0f", t-p}') ns)"
fi
OP=$(median < "$TMP/out_plain"); OT=$(median < "$TMP/out_traced")
echo "outside chunk median ns: plain $OP traced $OT (ratio $(awk -v t="$OT" -v p="$OP" 'BEGIN{printf "%.3f", t/p}'))"
