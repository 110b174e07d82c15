#!/usr/bin/env bash
# Java benchmarks (docs/java.md), in one run:
#  1. JVM throughput of tests/java's Burn with no agent, with the agent
#     loaded at start, and with the agent while `arcprof record -F 99` samples
#     the machine (rounds interleaved, medians);
#  2. the 3:1 program's shares as arcprof measures them, and what else the same
#     whole-machine capture holds (kernel frames, other processes);
#  3. the share of the Java main thread's samples resolved to a Java method and
#     with complete stacks, with and without -XX:+PreserveFramePointer.
# Usage: bench/java_bench.sh BUILD_DIR   (as root). Prints a markdown summary.
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof="$build/arcprof"
agent="$build/libarcprof_jvmti.so"
classes="$build/tests/java/classes"
java=${JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
rounds=${ROUNDS:-3}
secs=${SECS:-8}
if [ ! -f "$classes/Burn.class" ] || [ ! -f "$agent" ]; then
  echo "java_bench: build first (make build): missing $classes/Burn.class or $agent" >&2
  exit 1
fi
out=$(mktemp -d /tmp/arcprof-java-bench-XXXXXX)
trap 'rm -rf "$out"; rm -f /tmp/jit-*.dump.bench' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
loops() { "$java" -XX:+PreserveFramePointer "$@" -cp "$classes" Burn "$secs" count 2>/dev/null | awk '/burn: loops/ {printf "%.1f\n", $5}'; }
cleanup_jit() { rm -f /tmp/jit-"$1".dump /tmp/jit-"$1".arcprof; }

plain=() with_agent=() sampled=()
for r in $(seq "$rounds"); do
  plain+=("$(loops)")
  with_agent+=("$(loops -agentpath:"$agent=quiet")")
  "$arcprof" record -q -F 99 --no-ptt -o "$out/bg.db" > /dev/null 2>&1 &
  apid=$!; sleep 1
  sampled+=("$(loops -agentpath:"$agent=quiet")")
  kill -INT $apid; wait $apid || true
done
rm -f /tmp/jit-*.dump /tmp/jit-*.arcprof 2>/dev/null || true
p=$(median "${plain[@]}"); a=$(median "${with_agent[@]}"); s=$(median "${sampled[@]}")

# 2. shares and breadth of one whole-machine capture.
"$java" -XX:+PreserveFramePointer -cp "$classes" Burn "$((secs + 4))" 2> "$out/burn.err" &
jpid=$!
sleep 2
"$arcprof" record -q -d "$secs" -o "$out/all.db" 2> "$out/rec.err"
wait $jpid
cleanup_jit $jpid
"$arcprof" export --format folded -i "$out/all.db" > "$out/all.folded"
share() {  # file: heavy share among heavy+light samples on thread main, and totals
  awk '{n=$NF; h=($0 ~ /Burn\.heavy/); l=($0 ~ /Burn\.light/); H+=h*n; L+=l*n}
       END {printf "%.1f %.1f\n", 100*H/(H+L), 100*L/(H+L)}' "$1"
}
read -r heavy light < <(share "$out/all.folded")
procs=$("$arcprof" report -i "$out/all.db" --by pid --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["rows"]))')
kernel=$(awk '{n=$NF; T+=n; if ($0 ~ /_\[k\]/) K+=n} END {printf "%.1f", 100*K/T}' "$out/all.folded")

# 3. resolution and completeness with and without PreserveFramePointer.
resolve() {  # flag -> "resolved% complete%"
  "$arcprof" record -q -o "$out/r.db" -- "$java" "$1" -agentpath:"$agent=quiet" -cp "$classes" Burn "$secs" 2>/dev/null
  "$arcprof" export --format folded -i "$out/r.db" --comm main > "$out/r.folded"
  for f in /tmp/jit-*.dump; do [ -e "$f" ] && rm -f "$f" "${f%.dump}.arcprof"; done
  awk '{n=$NF; T+=n; if ($0 ~ /Burn\.(heavy|light)_\[j\]/) R+=n; split($1, f, ";"); if (f[2] == "clone3") C+=n}
       END {printf "%.1f %.1f\n", 100*R/T, 100*C/T}' "$out/r.folded"
}
read -r res_fp comp_fp < <(resolve -XX:+PreserveFramePointer)
read -r res_nofp comp_nofp < <(resolve -XX:-PreserveFramePointer)

cat <<EOT
## Java ($(basename "$(dirname "$(dirname "$java")")"), $(nproc) CPUs, ${secs} s runs, median of $rounds
| JVM throughput (Burn loops per CPU second of its main thread) | loops/s | vs no agent |
|---|---|---|
| no agent | $p | |
| agent loaded at start | $a | $(awk -v a="$a" -v p="$p" 'BEGIN {printf "%+.2f%%", 100*(a-p)/p}') |
| agent + arcprof record -F 99 (whole machine) | $s | $(awk -v a="$s" -v p="$p" 'BEGIN {printf "%+.2f%%", 100*(a-p)/p}') |

| 3:1 program, whole-machine capture | value |
|---|---|
| Burn.heavy / Burn.light share | $heavy% / $light% |
| processes in the same capture | $procs |
| samples with kernel frames | $kernel% |

| main thread samples | -XX:+PreserveFramePointer | -XX:-PreserveFramePointer |
|---|---|---|
| resolved to Burn.heavy/light | $res_fp% | $res_nofp% |
| stack complete to thread start | $comp_fp% | $comp_nofp% |
EOT
