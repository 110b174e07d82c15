#!/usr/bin/env bash
# The CPU of `arcprof continuous` under process churn (docs/performance.md,
# "Memory and open files under churn", CPU), one build beside another in the
# same run: both daemons run as in bench/churn_soak.sh (whole machine, 49 Hz,
# 60 s windows, PTT and Java attach on, every window pushed to the stand-in
# Pyroscope server) while tests/programs/churn starts RATE short processes a
# second and a JVM restarts every 4 s. Every ROUND seconds each daemon's
# utime+stime (/proc/PID/stat) and the load average go to cpu.csv; the summary
# gives each daemon's CPU seconds per minute of churn (median and range of the
# rounds, and over the whole run) and their ratio, and each daemon's minor
# page faults a minute and largest RSS (mem.csv). CPU time, unlike wall-clock
# overhead, does not stretch much with the machine's load, and both daemons
# see the same load, so the ratio holds on a busy machine.
# Usage: bench/churn_cpu.sh BUILD_DIR [ANCHOR_ARCPROF]   (as root)
#   ANCHOR_ARCPROF: another build's arcprof (with its libarcprof_jvmti.so
#   beside it), run beside BUILD_DIR's. Env: SECONDS_TOTAL (600), RATE (200),
#   ROUND (60), OUT, VERBOSE=1 (both daemons log with -v to OUT/*.log).
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof="${ARCPROF:-$build/arcprof}"
anchor=${2:-}
programs="$build/tests/programs"
total=${SECONDS_TOTAL:-600}
rate=${RATE:-200}
round=${ROUND:-60}
out=${OUT:-$build/bench/churn_cpu}
mkdir -p "$out"
work=$(mktemp -d /tmp/arcprof-churn-cpu-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; cp "$work"/*.log "$out"/ 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/server"
/usr/bin/python3 "$(dirname "$0")/../tests/push/pyroscope_server.py" --port 0 \
  --descriptors "$build/push/push_protos.desc" --out "$work/server" &
for _ in $(seq 100); do [ -s "$work/server/port" ] && break; sleep 0.1; done
port=$(cat "$work/server/port")

names=(this); bins=("$arcprof")
[ -n "$anchor" ] && { names+=(anchor); bins+=("$anchor"); }
pids=()
for i in "${!bins[@]}"; do
  "${bins[$i]}" ${VERBOSE:+-v} continuous --store "$work/store-${names[$i]}" --window 60s \
    --push "http://127.0.0.1:$port" 2> "$work/${names[$i]}.log" &
  pids+=($!)
done
clk=$(getconf CLK_TCK)
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
sleep 10  # startup (the first /proc snapshot) is not churn

"$programs/churn" "$rate" "$total" "$programs/storm_child" > "$work/churned" &
churn=$!
java_src=$(realpath "$(dirname "$0")/../tests/loader/churn/ChurnSpin.java")
( end=$(( $(date +%s) + total )); while [ "$(date +%s)" -lt "$end" ]; do
    echo >> "$work/jvms"; /usr/bin/java -XX:+UseSerialGC -Xmx64m "$java_src" 4 > /dev/null 2>&1 || true; done ) &

csv="$out/cpu.csv"
header="seconds,load1"
for n in "${names[@]}"; do header+=",${n}_cpu_s"; done
echo "$header" > "$csv"
start=$(date +%s.%N)
sample() {
  local line
  line="$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN {printf "%.1f", n - s}'),$(cut -d' ' -f1 /proc/loadavg)"
  for p in "${pids[@]}"; do line+=",$(awk -v t="$(ticks "$p")" -v hz="$clk" 'BEGIN {printf "%.3f", t / hz}')"; done
  echo "$line" >> "$csv"
  # The machine's steal time (a VM's CPUs taken by the host), beside it.
  echo "${line%%,*},$(awk '/^cpu / {print $9}' /proc/stat)" >> "$out/steal.csv"
  # Each daemon's minor page faults (cumulative) and RSS (kB).
  local mem="${line%%,*}"
  for p in "${pids[@]}"; do
    mem+=",$(awk '{sub(/.*\) /, ""); print $8}' "/proc/$p/stat"),$(awk '/^VmRSS/ {print $2}' "/proc/$p/status")"
  done
  echo "$mem" >> "$out/mem.csv"
}
: > "$out/steal.csv"
: > "$out/mem.csv"
sample
while kill -0 "$churn" 2> /dev/null; do
  for _ in $(seq "$round"); do kill -0 "$churn" 2> /dev/null || break; sleep 1; done
  sample
done
for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do wait "$p" || true; done

# Per round: CPU seconds per minute of each daemon; summary over the rounds.
awk -F, -v procs="$(cat "$work/churned")" -v names="${names[*]}" '
  BEGIN {n = 0}  # t[n] with n unset would be t[""], not t[0]
  NR == 1 {next}
  {t[n] = $1; l[n] = $2; for (i = 3; i <= NF; i++) c[n, i] = $i; nf = NF; n++}
  END {
    split(names, name, " ")
    printf "| %d rounds, %s processes | load avg (1 min) |", n - 1, procs
    for (i = 3; i <= nf; i++) printf " %s CPU s/min |", name[i - 2]
    if (nf == 4) printf " ratio |"
    printf "\n|---|---|"
    for (i = 3; i <= nf; i++) printf "---|"
    if (nf == 4) printf "---|"
    printf "\n"
    for (k = 1; k < n; k++) {
      printf "| %.0f-%.0f s | %s |", t[k - 1], t[k], l[k]
      for (i = 3; i <= nf; i++) { v[i, k] = 60 * (c[k, i] - c[k - 1, i]) / (t[k] - t[k - 1]); printf " %.3f |", v[i, k] }
      if (nf == 4) printf " %.2f |", v[3, k] / (v[4, k] > 0 ? v[4, k] : 1)
      printf "\n"
    }
    printf "| whole run | |"
    for (i = 3; i <= nf; i++) { w[i] = 60 * (c[n - 1, i] - c[0, i]) / (t[n - 1] - t[0]); printf " **%.3f** (%.2f%% of a CPU) |", w[i], w[i] / 0.6 }
    if (nf == 4) printf " **%.2f** |", w[3] / w[4]
    printf "\n"
  }' "$csv" | tee "$out/summary.md"
# Steal per round: CPU seconds a minute the host took from this VM's CPUs
# (quiet runs of one build differ by up to 30% here; steal may be why).
awk -F, -v hz="$clk" 'NR > 1 {printf "%s%.2f", sep, 60 * ($2 - s) / hz / ($1 - t); sep = ", "}
  {t = $1; s = $2} END {if (NR > 1) printf " steal CPU s/min by round\n"}' "$out/steal.csv" | tee -a "$out/summary.md"
# Page faults a minute and the largest RSS of each daemon over the rounds.
awk -F, -v names="${names[*]}" 'BEGIN {split(names, name, " ")}
  NR == 1 {t0 = $1; for (i = 2; i <= NF; i += 2) f0[i] = $i}
  {t = $1; for (i = 2; i <= NF; i += 2) {f[i] = $i; if ($(i + 1) > r[i]) r[i] = $(i + 1)}}
  END {if (NR > 1) for (i = 2; i <= NF; i += 2)
    printf "%s: %.0f minor page faults a minute, RSS at most %.1f MB\n", name[i / 2], 60 * (f[i] - f0[i]) / (t - t0), r[i] / 1024}' \
  "$out/mem.csv" | tee -a "$out/summary.md"
# JVMs started over the run (each compiles its source, then runs 4 s): the
# daemon's largest per-process cost, so its count moves the figure.
echo "$(wc -l < "$work/jvms" 2> /dev/null || echo 0) JVMs started in ${total} s" | tee -a "$out/summary.md"
