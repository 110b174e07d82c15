#!/usr/bin/env bash
# Cost and accuracy of record --alloc (docs/performance.md "Allocations").
#  1. ns per malloc(64)/free pair of tests/programs/alloc_mix (bench mode),
#     plain and under `record --alloc`, alternating: wall time and the
#     thread's CPU time per pair (the uprobes' traps are CPU time).
#  2. Sampling error: alloc_mix mix 400 (400 MiB allocated, 41.9 MB leaked)
#     recorded at three --alloc-rate values; alloc_bytes and inuse_bytes
#     totals against the truth.
# Usage: bench/alloc_bench.sh [BUILD_DIR] [ROUNDS] [PAIRS]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
pairs=${3:-200000}
arcprof=$build/arcprof
mix=$build/tests/programs/alloc_mix
for f in "$arcprof" "$mix"; do
  [ -x "$f" ] || { echo "alloc_bench: $f missing: build first" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/arcprof-alloc-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fields() { sed -n 's/.*ns_per_pair=\([0-9.]*\) cpu_ns_per_pair=\([0-9.]*\).*/\1 \2/p'; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
: > "$tmp/plain"; : > "$tmp/alloc"
for r in $(seq "$rounds"); do
  "$mix" bench "$pairs" | fields >> "$tmp/plain"
  "$arcprof" record -q --alloc -o "$tmp/b.db" -- "$mix" bench "$pairs" | fields >> "$tmp/alloc"
done
for k in plain alloc; do
  printf '%-6s wall ns/pair %s  cpu ns/pair %s\n' "$k" "$(cut -d' ' -f1 "$tmp/$k" | median)" \
    "$(cut -d' ' -f2 "$tmp/$k" | median)"
done
total=$((400 * 1048576)); leaked=$((total / 10))
for rate in 65536 524288 4194304; do
  for r in $(seq "$rounds"); do
    "$arcprof" record -q --alloc --alloc-rate "$rate" -o "$tmp/m.db" -- "$mix" mix 400
    a=$("$arcprof" export --format folded --metric alloc_bytes -i "$tmp/m.db" | awk '{s+=$NF} END {print s+0}')
    u=$("$arcprof" export --format folded --metric inuse_bytes -i "$tmp/m.db" | awk '{s+=$NF} END {print s+0}')
    awk -v rate="$rate" -v a="$a" -v u="$u" -v t="$total" -v l="$leaked" \
      'BEGIN {printf "rate %7d  alloc_bytes %+6.2f%%  inuse_bytes %+6.2f%%\n", rate, (a/t-1)*100, (u/l-1)*100}'
  done
done
