#!/usr/bin/env bash
# Cost of recording the whole machine vs only one container (record
# --container ID, filtered in BPF) while ten busy "containers" run: ten cgroup
# v2 groups named like docker's (system.slice/docker-<64 hex>.scope), each
# with a /bin/sh spinning. Rounds alternate the two recordings, each of
# SECONDS at -F 999. Per recording: arcprof's own CPU time (user + system,
# GNU time), the samples written and the capture's size. Prints medians and
# the ratio container/whole. Lost samples (a starved arcprof on a loaded
# machine) are printed by arcprof itself.
# The cgroups and the spinners are removed at the end, also on failure.
# Usage: bench/container_bench.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
seconds=${3:-10}
arcprof=$build/arcprof
[ -x "$arcprof" ] || { echo "container_bench: $arcprof missing: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "container_bench: needs root (BPF, cgroups)" >&2; exit 1; }
root=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
[ -n "$root" ] || { echo "container_bench: no cgroup v2 hierarchy mounted" >&2; exit 1; }

tmp=$(mktemp -d /tmp/arcprof-container-bench.XXXXXX)
made=() spinners=()
cleanup() {
  for p in "${spinners[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ((i = ${#made[@]} - 1; i >= 0; i--)); do
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "${made[$i]}" 2>/dev/null && break; sleep 0.1; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

hex() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
[ -d "$root/system.slice" ] || { mkdir "$root/system.slice"; made+=("$root/system.slice"); }
ids=()
for n in 0 1 2 3 4 5 6 7 8 9; do
  id=$(hex)
  dir=$root/system.slice/docker-$id.scope
  mkdir "$dir"
  made+=("$dir")
  ids+=("$id")
  sh -c "echo \$\$ > $dir/cgroup.procs && exec sh -c 'while :; do :; done'" &
  spinners+=($!)
done
target=${ids[0]}
sleep 1


# "CPU_S SAMPLES BYTES" of one recording
one() {
  local db=$tmp/c.db
  rm -f "$db"
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$arcprof" record -q --no-ptt --no-java -F 999 -d "$seconds" -o "$db" "$@" &
  local timer=$!
  wait "$timer"
  local cpu
  cpu=$(awk '{printf "%.3f", $1 + $2}' "$tmp/time")
  local samples
  samples=$("$arcprof" report -i "$db" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["total_samples"])')
  echo "$cpu $samples $(stat -c %s "$db")"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "container_bench: 10 busy containers, ${seconds} s at -F 999, $rounds rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/whole"
: >"$tmp/one"
for r in $(seq "$rounds"); do
  w=$(one)
  c=$(one --container "${target:0:12}")
  echo "round $r: whole machine: cpu_s samples bytes = $w"
  echo "round $r: --container:   cpu_s samples bytes = $c"
  echo "$w" >>"$tmp/whole"
  echo "$c" >>"$tmp/one"
done
col() { awk -v c="$2" '{print $c}' "$1" | median; }
for what in whole one; do
  echo "median $what: arcprof cpu $(col "$tmp/$what" 1) s, samples $(col "$tmp/$what" 2), capture $(col "$tmp/$what" 3) bytes"
done
awk -v a="$(col "$tmp/whole" 1)" -v b="$(col "$tmp/one" 1)" \
  'BEGIN {printf "container/whole arcprof CPU: %.3f\n", (a > 0 ? b / a : 0)}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
