#!/usr/bin/env bash
# Memory and open files of a long-lived `arcprof continuous` under process
# churn (docs/performance.md, "Memory and open files under churn"), and the peak RSS of a
# one-shot `arcprof record -- /bin/true` next to `perf record -g` in the same run.
#  - churn: RATE short processes per second (tests/programs/churn: a quarter
#    burn 3 ms in storm_work, the rest are /bin/true, sh -c :, env true) and a
#    JVM restarted every 4 s, for SECONDS (default 3600);
#  - every 10 s: arcprof's VmRSS, RssAnon, RssFile, open fds and own CPU -> CSV;
#  - an SVG plot of RSS over time (written here, no plotting tool needed);
#  - every window pushed (`--push`) to the local stand-in Pyroscope server of
#    tests/push/ (decoding with the real protos): request bytes per window;
#  - arcprof's own CPU (utime+stime from /proc/PID/stat) over the run.
#  - with VERBOSE=1 the daemon runs with -v: its log (daemon.log in OUT) has,
#    at each window close, what every memory holder uses against its budget.
# Usage: bench/churn_soak.sh BUILD_DIR   (as root). Env: SECONDS_TOTAL, RATE, OUT, WINDOW, VERBOSE.
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof="${ARCPROF:-$build/arcprof}"
programs="$build/tests/programs"
total=${SECONDS_TOTAL:-3600}
rate=${RATE:-200}
out=${OUT:-$build/bench/churn_soak}
mkdir -p "$out"
work=$(mktemp -d /tmp/arcprof-churn-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; cp "$work/daemon.err" "$out/daemon.log" 2>/dev/null || true; rm -rf "$work"' EXIT

# 1. record -- /bin/true: peak RSS of arcprof and of perf, same run.
peak() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1; }
arc_true=$(peak "$arcprof" record -q -o "$work/true.db" -- /bin/true)
perf_true=$(peak perf record -q -g -o "$work/true.data" -- /bin/true)

# 2. The soak, pushing every window to the stand-in server.
mkdir -p "$work/server"
/usr/bin/python3 "$(dirname "$0")/../tests/push/pyroscope_server.py" --port 0 \
  --descriptors "$build/push/push_protos.desc" --out "$work/server" &
server=$!
for _ in $(seq 100); do [ -s "$work/server/port" ] && break; sleep 0.1; done
"$arcprof" ${VERBOSE:+-v} continuous --store "$work/store" --window "${WINDOW:-60s}" \
  --push "http://127.0.0.1:$(cat "$work/server/port")" 2> "$work/daemon.err" &
daemon=$!
clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$daemon/stat"; }
sleep 5
cpu0=$(cpu_ticks); t0=$(date +%s.%N)
"$programs/churn" "$rate" "$total" "$programs/storm_child" > "$work/churned" &
churn=$!
java_src=$(realpath "$(dirname "$0")/../tests/loader/churn/ChurnSpin.java")
( end=$(( $(date +%s) + total )); while [ "$(date +%s)" -lt "$end" ]; do
    /usr/bin/java -XX:+UseSerialGC -Xmx64m "$java_src" 4 > /dev/null 2>&1 || true; done ) &
jvm_loop=$!
csv="$out/rss.csv"
echo "seconds,rss_kb,anon_kb,file_kb,fds,cpu_ticks" > "$csv"
start=$(date +%s)
while kill -0 "$churn" 2> /dev/null; do
  now=$(( $(date +%s) - start ))
  awk -v t="$now" -v fds="$(ls /proc/$daemon/fd | wc -l)" -v cpu="$(cpu_ticks)" '
    /^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} /^RssFile:/ {f=$2}
    END {print t "," r "," a "," f "," fds "," cpu}' "/proc/$daemon/status" >> "$csv"
  sleep 10
done
wait "$churn" "$jvm_loop" || true
cpu1=$(cpu_ticks); t1=$(date +%s.%N)
cpu_pct=$(awk -v a="$cpu0" -v b="$cpu1" -v s="$t0" -v e="$t1" -v hz="$clk" 'BEGIN {printf "%.2f", 100 * (b - a) / hz / (e - s)}')
load=$(cut -d' ' -f1-3 /proc/loadavg)
kill -TERM "$daemon"; wait "$daemon" || true
kill -TERM "$server" 2> /dev/null || true
store_bytes=$(du -sb "$work/store" | cut -f1)
# Push: request bytes per window (every window exactly once, by profile id).
push=$(/usr/bin/python3 - "$work/server/requests.jsonl" <<'PY'
import json, sys
ok = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in ok if r.get("status") == 200]
ids = [s["id"] for r in ok for se in r.get("series", []) for s in se["samples"]]
body = sorted(r["body_bytes"] for r in ok)
if body:
    print("%d windows (%d ids, %d distinct), request bytes per window: median %d, max %d" % (
        len(body), len(ids), len(set(ids)), body[len(body) // 2], body[-1]))
else:
    print("nothing pushed")
PY
)

# 3. SVG: RSS (MB) over time (min).
awk -F, -v w=800 -v h=300 '
  BEGIN {n = 0}  # t[n] with n unset would be t[""], not t[0]
  NR == 1 {next}
  {t[n] = $1; r[n] = $2 / 1024; a[n] = $3 / 1024; if ($2 / 1024 > max) max = $2 / 1024; n++}
  END {
    if (n == 0) exit
    tmax = t[n-1] > 0 ? t[n-1] : 1; max = max * 1.1
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", w + 60, h + 40
    printf "<text x=\"60\" y=\"14\">arcprof continuous RSS (MB) under churn; anon in grey; %.0f min</text>\n", tmax / 60
    printf "<line x1=\"50\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", h + 20, w + 50, h + 20
    printf "<line x1=\"50\" y1=\"20\" x2=\"50\" y2=\"%d\" stroke=\"black\"/>\n", h + 20
    for (k = 0; k <= 4; k++) printf "<text x=\"5\" y=\"%d\">%.0f</text>\n", h + 24 - k * h / 4, max * k / 4
    for (s = 0; s < 2; s++) {
      printf "<polyline fill=\"none\" stroke=\"%s\" points=\"", s ? "grey" : "steelblue"
      for (i = 0; i < n; i++) printf "%.1f,%.1f ", 50 + t[i] / tmax * w, h + 20 - (s ? a[i] : r[i]) / max * h
      printf "\"/>\n"
    }
    print "</svg>"
  }' "$csv" > "$out/rss.svg"

# 4. Summary: warm-up is the first 10 minutes (or a sixth of a shorter run).
warm=$(( total >= 3600 ? 600 : total / 6 ))
awk -F, -v warm="$warm" -v arc="$arc_true" -v perf="$perf_true" -v procs="$(cat "$work/churned")" \
    -v store="$store_bytes" -v secs="$total" -v cpu="$cpu_pct" -v load="$load" -v push="$push" '
  NR == 1 {next}
  $1 <= warm {base = $2; bf = $5}
  $1 > warm {if ($2 > max) max = $2; if ($5 > mf) mf = $5}
  {last = $2; lf = $5}
  END {
    printf "| churn soak (%d s, %s processes) | value |\n|---|---|\n", secs, procs
    printf "| RSS after warm-up (%d s) | %.0f MB |\n", warm, base / 1024
    printf "| max RSS after warm-up | %.0f MB (%+.1f%%) |\n", max / 1024, base ? 100 * (max - base) / base : 0
    printf "| RSS at the end | %.0f MB |\n", last / 1024
    printf "| open fds after warm-up / max / end | %d / %d / %d |\n", bf, mf, lf
    printf "| store bytes per hour | %.1f MB |\n", store / 1048576 * 3600 / secs
    printf "| arcprof CPU (utime+stime), %% of one CPU | %s%% (load average at the end %s) |\n", cpu, load
    printf "| push (Pyroscope PushRequest) | %s |\n", push
    printf "| record -- /bin/true peak RSS: arcprof / perf record -g | %.0f MB / %.0f MB (%.1fx) |\n", arc / 1024, perf / 1024, perf ? arc / perf : 0
  }' "$csv" | tee "$out/summary.md"
echo "RSS series: $csv, plot: $out/rss.svg"
