#!/usr/bin/env bash
# `make bench`: every benchmark, side by side with perf in the same run.
set -euo pipefail
build=${1:-build}
if [ "$(id -u)" -ne 0 ]; then
  echo "make bench: the benchmarks load BPF programs: run as root (sudo make bench)" >&2
  exit 1
fi
for b in bench/*.sh; do
  [ -x "$b" ] || continue
  echo "== $b"
  "$b" "$build"
done
for exe in "$build"/bench/*_bench; do
  [ -x "$exe" ] || continue
  echo "== $exe"
  "$exe"
done
