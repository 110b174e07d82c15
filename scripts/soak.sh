#!/usr/bin/env bash
# Soak run: a whole-machine `arcprof record` for DURATION seconds while
# processes and threads churn. Samples arcprof's RSS every 10 s, and at the end
# its own CPU time and the lost-sample counters; writes rss.csv, record.log,
# summary.txt and rss.svg (a plot) into OUTDIR. docs/performance.md
# (reliability) has the figures of a run.
# Usage: sudo scripts/soak.sh ARCPROF_BINARY DURATION_S OUTDIR [record options...]
# With ANCHOR_OPTS set (e.g. "--max-thread-records 0 --buffer-mb 64", what
# main did before the thread budget and the growing ring), a second record
# with those options runs beside the first under the same churn: its RSS is
# the anchor column of rss.csv and the grey line of rss.svg. ANCHOR_ARCPROF
# (another build's arcprof) runs that second record with the same options
# (and ANCHOR_OPTS, when set) instead.
set -euo pipefail
arcprof=${1:?arcprof binary} duration=${2:?seconds} out=${3:?output dir}
shift 3
mkdir -p "$out"
rm -f "$out/soak.db" "$out/rss.csv"

# Churn: short-lived processes (about 50 a second) and a python3 process that
# starts and ends threads all the time, each thread named differently.
churn_procs() { while :; do /bin/true; /bin/sh -c 'exit 0'; sleep 0.04; done; }
churn_threads() {
  python3 - <<'PY'
import threading, time
n = 0
def work(i):
    s = 0
    for k in range(20000): s += k * i
while True:
    ts = [threading.Thread(target=work, args=(i,), name=f"churn-{n}-{i}") for i in range(8)]
    for t in ts: t.start()
    for t in ts: t.join()
    n += 1
    time.sleep(0.01)
PY
}
churn_procs & p1=$!
churn_threads & p2=$!
trap 'kill $p1 $p2 2>/dev/null || true' EXIT

"$arcprof" record -o "$out/soak.db" -d "$duration" "$@" 2> "$out/record.log" &
rec=$!
anchor=
if [ -n "${ANCHOR_OPTS:-}" ] || [ -n "${ANCHOR_ARCPROF:-}" ]; then
  # shellcheck disable=SC2086
  "${ANCHOR_ARCPROF:-$arcprof}" record -o "$out/anchor.db" -d "$duration" ${ANCHOR_OPTS:-} "$@" 2> "$out/anchor.log" &
  anchor=$!
fi
start=$(date +%s)
echo "seconds,rss_kib,fds,anchor_rss_kib" > "$out/rss.csv"
while kill -0 "$rec" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$rec/status 2>/dev/null || true)
  fds=$(ls /proc/$rec/fd 2>/dev/null | wc -l || true)
  arss=
  [ -n "$anchor" ] && arss=$(awk '/^VmRSS/ {print $2}' /proc/$anchor/status 2>/dev/null || true)
  [ -n "$rss" ] && echo "$now,$rss,$fds,$arss" >> "$out/rss.csv"
  # CPU time so far (utime+stime, clock ticks), kept for the summary.
  cpu=$(awk '{print $14 + $15}' /proc/$rec/stat 2>/dev/null || true)
  [ -n "$cpu" ] && echo "$cpu" > "$out/cpu_ticks"
  sleep 10
done
wait "$rec" || echo "record exited with $?" >> "$out/record.log"
[ -n "$anchor" ] && { wait "$anchor" || echo "record exited with $?" >> "$out/anchor.log"; }
elapsed=$(( $(date +%s) - start ))
ticks=$(cat "$out/cpu_ticks" 2>/dev/null || echo 0)
hz=$(getconf CLK_TCK)
{
  echo "duration_s=$elapsed"
  echo "own_cpu_s=$(awk -v t="$ticks" -v hz="$hz" 'BEGIN {printf "%.1f", t / hz}')"
  echo "own_cpu_percent_of_one_cpu=$(awk -v t="$ticks" -v hz="$hz" -v d="$elapsed" 'BEGIN {printf "%.2f", 100 * t / hz / d}')"
  echo "rss_first_kib=$(sed -n 2p "$out/rss.csv" | cut -d, -f2)"
  echo "rss_max_kib=$(tail -n +2 "$out/rss.csv" | cut -d, -f2 | sort -n | tail -1)"
  echo "rss_last_kib=$(tail -1 "$out/rss.csv" | cut -d, -f2)"
  echo "fds_max=$(tail -n +2 "$out/rss.csv" | cut -d, -f3 | sort -n | tail -1)"
  if [ -n "$anchor" ]; then
    echo "anchor (${ANCHOR_ARCPROF:-} ${ANCHOR_OPTS:-}): rss_max_kib=$(tail -n +2 "$out/rss.csv" | cut -d, -f4 | sort -n | tail -1)"
    grep -E "samples in|lost" "$out/anchor.log" | sed 's/^/anchor: /' || true
  fi
  grep -E "samples in|lost" "$out/record.log" || true
  echo "counters:"
  # Captures keep counters in row blocks, which the sqlite3 shell cannot read.
  counters=$(dirname "$arcprof")/bench/capture_counters
  if [ -x "$counters" ]; then
    "$counters" "$out/soak.db" 2>/dev/null | tr '\t' '|' || true
  fi
} > "$out/summary.txt"
python3 - "$out/rss.csv" "$out/rss.svg" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
xs = [int(r["seconds"]) for r in rows]; ys = [int(r["rss_kib"]) / 1024 for r in rows]
anchor = [(int(r["seconds"]), int(r["anchor_rss_kib"]) / 1024) for r in rows if r.get("anchor_rss_kib")]
W, H, L, B = 640, 320, 60, 40
xmax = max(xs + [1]); ymax = max(ys + [y for _, y in anchor] + [1]) * 1.1
def px(x): return L + (W - L - 20) * x / xmax
def py(y): return H - B - (H - B - 20) * y / ymax
pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys))
apts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in anchor)
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H-B}" x2="{W-20}" y2="{H-B}" stroke="black"/>',
       f'<line x1="{L}" y1="20" x2="{L}" y2="{H-B}" stroke="black"/>']
for i in range(6):
    y = ymax * i / 5
    out.append(f'<text x="{L-5}" y="{py(y)+4:.1f}" text-anchor="end">{y:.0f}</text>')
    x = xmax * i / 5
    out.append(f'<text x="{px(x):.1f}" y="{H-B+15}" text-anchor="middle">{x/60:.0f}</text>')
out.append(f'<text x="{(W+L)/2}" y="{H-5}" text-anchor="middle">minutes</text>')
out.append(f'<text x="12" y="{H/2}" transform="rotate(-90 12 {H/2})" text-anchor="middle">RSS (MiB)</text>')
if apts:
    out.append(f'<polyline fill="none" stroke="#999999" stroke-width="1.5" points="{apts}"/>')
    out.append(f'<text x="{W-25}" y="34" text-anchor="end" fill="#999999">anchor</text>')
    out.append(f'<text x="{W-25}" y="48" text-anchor="end" fill="#c0392b">this build</text>')
out.append(f'<polyline fill="none" stroke="#c0392b" stroke-width="1.5" points="{pts}"/>')
out.append(f'<text x="{W/2}" y="14" text-anchor="middle">arcprof record RSS, every 10 s, under process/thread churn</text>')
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
cat "$out/summary.txt"
