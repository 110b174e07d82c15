#!/usr/bin/env bash
# Java benchmarks (docs/java.md), in one run:
#  1. JVM throughput of tests/java's Burn with no agent, with the agent
#     loaded at start, and with the agent while `arcprof record -F 99` samples
#     the machine (rounds interleaved, medians);
#  2. the 3:1 program's shares as arcprof measures them, and what else the same
#     whole-machine capture holds (kernel frames, other processes);
#  3. the share of the Java main thread's samples resolved to a Java method and
#     with complete stacks, with and without -XX:+PreserveFramePointer;
#  4. Split (interpreted main -> compiled drive -> alpha/beta 3:1, a deep
#     thread d1..d7), late-attached, with and without PreserveFramePointer:
#     complete call chains, named interpreted frames and the 3:1 split as
#     arcprof and as `perf record -g` with the agent's perf map see the same
#     window of the same JVM.
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

# 1b. JVM start-up (`java Burn 0`: start, one check of the clock, exit), ms.
startup_ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$java" "$@" -cp "$classes" Burn 0 > /dev/null 2>&1
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
}
start_plain=() start_agent=()
for r in $(seq $((rounds * 2))); do
  start_plain+=("$(startup_ms)")
  start_agent+=("$(startup_ms -agentpath:"$agent=quiet")")
done
rm -f /tmp/jit-*.dump /tmp/jit-*.arcprof 2>/dev/null || true
sp=$(median "${start_plain[@]}"); sa=$(median "${start_agent[@]}")

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

# 4. Split: arcprof and perf (with the agent's perf map) on the same window.
split_flags=(-XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Split::drive -XX:CompileCommand=dontinline,Split::alpha
  -XX:CompileCommand=dontinline,Split::beta -XX:CompileCommand=dontinline,Split::work -XX:CompileCommand=dontinline,Split::d2
  -XX:CompileCommand=dontinline,Split::d4 -XX:CompileCommand=dontinline,Split::d6)
perf=${PERF:-$(command -v perf || true)}
split_row() {  # flag -> markdown cells
  "$java" "$1" -XX:+EnableDynamicAgentLoading "${split_flags[@]}" -cp "$classes" Split "$((secs + 6))" 2> "$out/split.err" &
  local jpid=$!
  sleep 3
  "$arcprof" java attach "$jpid" --options perfmap,quiet > /dev/null
  "$arcprof" record -q -o "$out/s.db" -d "$secs" -p "$jpid" 2> /dev/null &
  local rpid=$!
  if [ -n "$perf" ]; then
    "$perf" record -q -g -F 999 -e cpu-clock -p "$jpid" -o "$out/perf.data" -- sleep "$secs" > /dev/null 2>&1 || true
  fi
  wait $rpid
  "$arcprof" export --format folded -i "$out/s.db" --comm main > "$out/s.main"
  [ -n "$perf" ] && "$perf" script -i "$out/perf.data" -F tid,ip,sym > "$out/perf.txt" 2> /dev/null || : > "$out/perf.txt"
  kill "$jpid" 2> /dev/null; wait "$jpid" 2> /dev/null || true
  cleanup_jit "$jpid"; rm -f /tmp/perf-"$jpid".map
  python3 - "$out/s.main" "$out/perf.txt" <<'PY'
import re, sys
def figures(stacks):  # stacks: (root-first frames, count)
    J = F = A = B = I = N = C = 0
    for fs, n in stacks:
        if not any(f.startswith('Split.') and not f.startswith('Split.d') for f in fs): continue
        J += n
        s = ';'.join(fs)
        complete = fs and fs[0] in ('clone3', 'clone', 'start_thread')
        C += n * bool(complete)
        if complete and ('Split.main;Split.drive;Split.alpha' in s or 'Split.main;Split.drive;Split.beta' in s): F += n
        A += n * ('Split.alpha' in fs); B += n * ('Split.beta' in fs)
        I += n * ('Interpreter' in fs); N += n * ('Split.main' in fs)
    return J, F, A, B, I, N, C
arc = []
for line in open(sys.argv[1]):
    s, n = line.rsplit(' ', 1)
    arc.append(([re.sub(r'_\[[a-z]\]$', '', f) for f in s.split(';')[1:]], int(n)))
perf, cur = [], []
for line in open(sys.argv[2]):
    line = line.strip()
    if not line:
        if cur: perf.append((cur[::-1], 1)); cur = []
        continue
    parts = line.split(None, 1)
    if len(parts) == 2 and re.match(r'^[0-9a-f]+$', parts[0]):
        cur.append(re.sub(r'\+0x[0-9a-f]+$', '', parts[1].split(' (')[0]))
if cur: perf.append((cur[::-1], 1))
def cells(f):
    J, F, A, B, I, N, C = f
    if J == 0: return 'n/a | n/a | n/a | n/a'
    named = 100.0 * N / J  # main is always interpreted: named when Split.main appears
    split = f'{100.0*A/(A+B):.1f}%' if A + B else 'no alpha/beta frame'
    return f'{100.0*C/J:.1f}% | {100.0*F/J:.1f}% | {named:.1f}% | {split} ({J} samples)'
print(cells(figures(arc)) + ' | ' + cells(figures(perf)))
PY
}
row_fp=$(split_row -XX:+PreserveFramePointer)
row_nofp=$(split_row -XX:-PreserveFramePointer)

cat <<EOT
## Java ($(basename "$(dirname "$(dirname "$java")")"), $(nproc) CPUs, ${secs} s runs, median of $rounds
| JVM throughput (Burn loops per CPU second of its main thread) | loops/s | vs no agent |
|---|---|---|
| no agent | $p | |
| agent loaded at start | $a | $(awk -v a="$a" -v p="$p" 'BEGIN {printf "%+.2f%%", 100*(a-p)/p}') |
| agent + arcprof record -F 99 (whole machine) | $s | $(awk -v a="$s" -v p="$p" 'BEGIN {printf "%+.2f%%", 100*(a-p)/p}') |

| JVM start-up (\`java Burn 0\`, median of $((rounds * 2))) | ms |
|---|---|
| no agent | $sp |
| agent at start | $sa |

| 3:1 program, whole-machine capture | value |
|---|---|
| Burn.heavy / Burn.light share | $heavy% / $light% |
| processes in the same capture | $procs |
| samples with kernel frames | $kernel% |

| main thread samples | -XX:+PreserveFramePointer | -XX:-PreserveFramePointer |
|---|---|---|
| resolved to Burn.heavy/light | $res_fp% | $res_nofp% |
| stack complete to thread start | $comp_fp% | $comp_nofp% |

| Split, late-attached, main thread | arcprof: reaches thread start | arcprof: main;drive;alpha/beta | arcprof: main named | arcprof: alpha share | perf -g + perf map: reaches thread start | perf: main;drive;alpha/beta | perf: main named | perf: alpha share |
|---|---|---|---|---|---|---|---|---|
| -XX:+PreserveFramePointer | $row_fp |
| -XX:-PreserveFramePointer | $row_nofp |
EOT
