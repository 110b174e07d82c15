#!/usr/bin/env bash
# Cost of `arcprof trace` of a Java root (docs/performance.md "trace of a Java
# root"). One JVM (no flags) runs tests/java/programs/TraceTarget.java with
# commands on stdin; `hot N` calls hotRoot(N), N calls of the short method
# spin under the root, and answers its ns per spin call. Per round:
#   plain     hot, and `outside` (spinOutside, never under the root)
#   traced    the same under `arcprof trace --root TraceTarget.hotRoot -p`
#             (spin probed once hotRoot was reached), and what the capture
#             measured per call of spin (wall / calls), calibrated and with
#             --no-calibration
#   after     hot once the trace ended (the probes out)
# Cost per probed call = traced - plain ns per spin call. Each figure is the
# best of nine runs of CALLS calls (20,000: a few milliseconds, within one
# time slice of a loaded machine); outside: of 2,000,000 calls.
# Usage: bench/java_trace_bench.sh [BUILD_DIR] [ROUNDS] [CALLS] [JAVA]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
CALLS=${3:-20000}
JAVA=${4:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
ARCPROF=$BUILD/arcprof
CLASSES=$BUILD/tests/java/classes
TMP=$(mktemp -d)
JVM_PID=
cleanup() { [ -n "$JVM_PID" ] && kill "$JVM_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

coproc JVM { exec "$JAVA" -cp "$CLASSES" TraceTarget; }
JVM_PID=$JVM_PID
ask() { echo "$1" >&"${JVM[1]}"; read -r line <&"${JVM[0]}"; echo "${line#* }"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The best of nine (no pipeline: a subshell has no coproc descriptors).
# $1 hot or outside, $2 calls (default CALLS).
best() { : > "$TMP/b"; for _ in 1 2 3 4 5 6 7 8 9; do ask "$1 ${2:-$CALLS}" >> "$TMP/b"; done; sort -g "$TMP/b" | head -1; }
# wall ns per call of spin in a trace capture.
measured() {
  w=$("$ARCPROF" report -i "$1" --view xprof --metric wall 2>/dev/null | awk '$NF=="TraceTarget.spin" {print $2}' | head -1)
  c=$("$ARCPROF" report -i "$1" --view xprof --metric calls 2>/dev/null | awk '$NF=="TraceTarget.spin" {print $2}' | head -1)
  awk -v w="$w" -v c="$c" 'BEGIN {if (c > 0) printf "%.2f\n", w / c}'
}
traced() {  # $1: capture, $2..: extra options
  local out=$1; shift
  "$ARCPROF" trace --root TraceTarget.hotRoot -p "$JVM_PID" -o "$out" "$@" 2> "$TMP/err" &
  local pid=$!
  for _ in $(seq 900); do grep -q "tracing" "$TMP/err" && break; sleep 0.1; done
  ask "hot 1000" > /dev/null; sleep 1.5  # hotRoot reached: spin gets its probes
  best hot >> "$TMP/$(basename "$out").hot"
  best outside 2000000 >> "$TMP/$(basename "$out").outside"
  kill -INT "$pid"; wait "$pid" || true
}

for _ in $(seq 20); do ask "hot 2000000" > /dev/null; ask "outside 2000000" > /dev/null; done  # JIT
for r in $(seq "$ROUNDS"); do
  best hot >> "$TMP/plain"; best outside 2000000 >> "$TMP/out_plain"
  traced "$TMP/t.db"; measured "$TMP/t.db" >> "$TMP/m_cal"
  traced "$TMP/u.db" --no-calibration; measured "$TMP/u.db" >> "$TMP/m_uncal"
  sleep 1; best hot 2000000 > /dev/null; best hot >> "$TMP/after"
done
P=$(median < "$TMP/plain"); T=$(median < "$TMP/t.db.hot"); A=$(median < "$TMP/after")
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "plain ns per spin call:             $P"
echo "traced ns per spin call:            $T"
echo "cost per probed call (ns):          $(awk -v t="$T" -v p="$P" 'BEGIN {printf "%.1f", t - p}')"
echo "measured per call, calibrated:      $(median < "$TMP/m_cal")"
echo "measured per call, uncalibrated:    $(median < "$TMP/m_uncal")"
echo "after the trace ns per spin call:   $A"
echo "outside: traced / plain:            $(awk -v t="$(median < "$TMP/t.db.outside")" -v p="$(median < "$TMP/out_plain")" 'BEGIN {printf "%.3f", t / p}')"
