#!/usr/bin/env bash
# Node named with no flag (docs/node.md): what the V8 walk costs and how
# complete its chains are. Each round runs tests/runtimes/programs/split.js
# (the 3:1 program) for SECONDS under:
#   plain    no recording;
#   floor    no recording, an empty BPF probe at 999 Hz on every CPU
#            (bpftrace 'profile:hz:999 {}'): the cost of the timer itself;
#   native   `record -- nodebin split.js`: a copy of node under a name arcprof
#            does not recognize, so the same binary is sampled native-only;
#   v8       `record -- node split.js`: recognized, JavaScript frames read;
#   v8-pbp   the same with --perf-basic-prof.
# alternating, at 999 Hz. The program prints its rounds per second of CPU;
# slowdown = 1 - median(rate with) / median(rate without). With
# kernel.bpf_stats_enabled=1 the sampler program's run time is read from
# bpftool near the end of each recorded run (the program of this arcprof: the
# one that appeared when it started; a run where another arcprof started at
# the same time gives none): ns per run of the program (every CPU's samples, other processes'
# filtered out early) and, against native-only, the added ns per sample of
# node. The chains are measured as the tests do (node_runtime_tests prints
# them: `measured ...`).
# Usage: sudo bench/node_bench.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
seconds=${3:-4}
arcprof=$build/arcprof
program=$(cd "$(dirname "$0")/.." && pwd)/tests/runtimes/programs/split.js
node=$(command -v node || true)
[ -x "$arcprof" ] || { echo "node_bench: $arcprof missing: build first" >&2; exit 1; }
[ -n "$node" ] || { echo "node_bench: node is not installed (Debian package nodejs)" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "node_bench: bpftool missing" >&2; exit 1; }
tmp=$(mktemp -d /tmp/node-bench-XXXXXX)
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  sysctl -q kernel.bpf_stats_enabled="$stats_was"
  rm -rf "$tmp"
}
trap cleanup EXIT
cp "$(readlink -f "$node")" "$tmp/nodebin"
sysctl -q kernel.bpf_stats_enabled=1

# Arithmetic without bc (not a dependency): awk's floating point.
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
calc_int() { awk "BEGIN { printf \"%d\", $1 }"; }

on_sample_ids() {
  bpftool prog show --json 2>/dev/null |
    python3 -c 'import json, sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p.get("name") == "on_sample"))'
}

# run MODE: prints "rate samples prog_ns prog_runs"
run() {
  local mode=$1 bin=$node flags=() out
  case $mode in
    plain)
      out=$(ARCPROF_SPLIT_RATE=1 "$node" "$program" "$seconds")
      echo "$(sed -n 's/^rounds_per_cpu_second //p' <<<"$out") 0 0 0"
      return ;;
    floor)
      bpftrace -e 'profile:hz:999 { }' >"$tmp/bt.out" 2>&1 &
      local bt=$!
      for _ in $(seq 100); do grep -q Attaching "$tmp/bt.out" && break; sleep 0.1; done
      sleep 0.5
      out=$(ARCPROF_SPLIT_RATE=1 "$node" "$program" "$seconds")
      kill -INT "$bt" 2>/dev/null || true
      wait "$bt" 2>/dev/null || true
      echo "$(sed -n 's/^rounds_per_cpu_second //p' <<<"$out") 0 0 0"
      return ;;
    native) bin=$tmp/nodebin ;;
    v8-pbp) flags=(--perf-basic-prof) ;;
  esac
  local before
  before=$(on_sample_ids)
  ARCPROF_SPLIT_RATE=1 "$arcprof" record -o "$tmp/$mode.db" -- "$bin" "${flags[@]}" "$program" "$seconds" \
    >"$tmp/out" 2>"$tmp/err" &
  local pid=$! stats=""
  sleep "$(calc "$seconds - 0.5")"
  # The sampler program this arcprof loaded (the one that was not there
  # before it started): run time and count so far.
  stats=$(bpftool prog show --json 2>/dev/null | python3 -c '
import json, sys
before = set(sys.argv[1].split())
new = [p for p in json.load(sys.stdin) if p.get("name") == "on_sample" and str(p["id"]) not in before]
if len(new) == 1:
    print(new[0].get("run_time_ns", 0), new[0].get("run_cnt", 0))
' "$before" || true)
  wait "$pid"
  local samples
  samples=$(sed -n 's/.*: \([0-9]*\) samples in.*/\1/p' "$tmp/err" | head -1)
  echo "$(sed -n 's/^rounds_per_cpu_second //p' "$tmp/out") ${samples:-0} ${stats:-0 0}"
}

declare -A rates ns runs samples
for r in $(seq 1 "$rounds"); do
  for mode in plain floor native v8 v8-pbp; do
    read -r rate s t c < <(run "$mode")
    rates[$mode]+="$rate "
    echo "round $r $mode: $rate rounds/cpu-s, $s samples, program $t ns / $c runs" >&2
    # Program figures only from runs whose program was found.
    if [ "${c:-0}" -gt 0 ]; then
      ns[$mode]+="$(calc_int "$t / $c") "
      # node's share of the program's runs (its samples over the whole run
      # against the runs counted 0.5 s before the end: an estimate)
      runs[$mode]+="$(calc "$s * ($seconds - 0.5) / $seconds / $c") "
    fi
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
sum() { tr ' ' '\n' | grep -v '^$' | awk '{s+=$1} END {print s+0}'; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in plain floor native v8 v8-pbp; do
  echo "$mode: median $(median <<<"${rates[$mode]}") rounds/cpu-s"
done
p=$(median <<<"${rates[plain]}"); n=$(median <<<"${rates[native]}"); v=$(median <<<"${rates[v8]}")
f=$(median <<<"${rates[floor]}")
echo "slowdown floor (empty probe) vs plain: $(calc "(1 - $f / $p) * 100")%"
echo "slowdown native-only vs plain: $(calc "(1 - $n / $p) * 100")%"
echo "slowdown v8 vs plain: $(calc "(1 - $v / $p) * 100")%"
echo "slowdown v8 vs native-only: $(calc "(1 - $v / $n) * 100")%"
for mode in native v8 v8-pbp; do
  [ -n "${ns[$mode]:-}" ] || continue
  echo "$mode: program median $(median <<<"${ns[$mode]}") ns per run (runs: ${ns[$mode]}), node's share of runs ~$(median <<<"${runs[$mode]}")"
done
if [ -n "${ns[native]:-}" ] && [ -n "${ns[v8]:-}" ]; then
  n=$(median <<<"${ns[native]}"); v=$(median <<<"${ns[v8]}"); share=$(median <<<"${runs[v8]}")
  echo "v8 walk: ~$(calc_int "($v - $n) / $share") ns added per node sample (medians; every CPU's samples run the program)"
fi
