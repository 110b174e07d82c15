#!/usr/bin/env bash
# The main job (`sudo make run`): profile the whole machine while a bundled
# workload runs, print the tprof report and write a flame graph.
set -euo pipefail
build=${1:-build}
arcprof="$build/arcprof"
out="$build/demo"
if [ "$(id -u)" -ne 0 ]; then
  echo "make run: profiling loads BPF programs: run it as root (sudo make run)" >&2
  exit 1
fi
mkdir -p "$out"
rm -f "$out/arcprof.db" "$out/flamegraph.svg" "$out/arcprof.folded"

# The workload: the ground-truth program (f_heavy/f_light 3:1 under outer),
# stock gzip compressing a generated file, and a Python and a Node program
# (drive() calls alpha() 3 times per beta(), named with no flag:
# docs/python.md, docs/node.md), side by side for about 5 seconds.
workload() {
  "$build/tests/programs/ground_truth" 5 &
  local gt=$!
  local py=""
  if command -v python3 > /dev/null; then
    python3 "$(dirname "$0")/../tests/runtimes/programs/split.py" 5 &
    py=$!
  fi
  local js=""
  if command -v node > /dev/null; then
    node "$(dirname "$0")/../tests/runtimes/programs/split.js" 5 &
    js=$!
  fi
  local data="$out/workload.bin"
  head -c 64M /dev/urandom | base64 > "$data"
  local end=$((SECONDS + 5))
  while [ $SECONDS -lt $end ]; do gzip -c -6 "$data" > /dev/null; done
  wait "$gt"
  if [ -n "$py" ]; then wait "$py"; fi
  if [ -n "$js" ]; then wait "$js"; fi
  rm -f "$data"
}

echo "== arcprof record (whole machine) while the workload runs"
"$arcprof" record -o "$out/arcprof.db" -d 7 2> "$out/record.log" &
rec=$!
# Wait until the sampler is attached before starting the workload.
for _ in $(seq 100); do grep -q recording "$out/record.log" 2>/dev/null && break; sleep 0.1; done
workload
wait "$rec" || { cat "$out/record.log" >&2; exit 1; }
cat "$out/record.log" >&2

echo
echo "== arcprof report (tprof: process > thread > module > symbol, rows >= 1%)"
"$arcprof" report -i "$out/arcprof.db" --min 1

if "$arcprof" export --help 2>/dev/null | grep -q svg; then
  "$arcprof" export --format svg -i "$out/arcprof.db" -o "$out/flamegraph.svg"
  echo
  echo "flame graph: $out/flamegraph.svg"
fi
"$arcprof" export --format folded -i "$out/arcprof.db" -o "$out/arcprof.folded"
echo "folded stacks: $out/arcprof.folded   capture: $out/arcprof.db"
