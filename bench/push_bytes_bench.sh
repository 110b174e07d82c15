#!/usr/bin/env bash
# Bytes per window on the wire and on disk: the windows of a whole-machine
# `arcprof continuous` (60 s windows) pushed to the tests' stand-in server
# (tests/push/pyroscope_server.py) once as Pyroscope (PushRequest with the
# gzipped pprof) and once as OTLP (gzipped ExportProfilesServiceRequest), beside
# each window's file in the store. Every window is sent to both, so the
# figures compare the same windows side by side.
# Usage (root): bench/push_bytes_bench.sh [BUILD_DIR] [WINDOWS (default 3)] [HZ (default 49)]
# ARCPROF_PUSH_BENCH_STORE=DIR pushes an existing store instead of recording.
set -euo pipefail
build=${1:-build}
windows=${2:-3}
hz=${3:-49}
here=$(cd "$(dirname "$0")/.." && pwd)
arcprof=$build/arcprof
server=$here/tests/push/pyroscope_server.py
descriptors=$build/push/push_protos.desc
otlp_python=$build/reports/otlp_python
for f in "$arcprof" "$descriptors" "$otlp_python"; do
  [ -e "$f" ] || { echo "push_bytes_bench: $f missing: build first (cmake --build $build)" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/arcprof-push-bytes.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

store=${ARCPROF_PUSH_BENCH_STORE:-}
if [ -z "$store" ]; then
  store=$tmp/store
  "$arcprof" continuous --store "$store" --window 60s -F "$hz" --no-java 2>"$tmp/arcprof.log" & arc=$!
  pids+=($arc)
  # Windows end on the minute: wait for WINDOWS full ones after the first boundary.
  until [ "$(ls "$store"/*.db 2>/dev/null | wc -l)" -ge $((windows + 1)) ]; do sleep 5; done
  kill -TERM "$arc"
  wait "$arc" || true
  # The first (partial) and last (cut by SIGTERM) windows are not full: drop them.
  mapfile -t dbs < <(ls "$store"/*.db | sort)
  for f in "${dbs[0]}" "${dbs[-1]}"; do rm -f "$f" "${f%.db}.sent"; done
fi

mkdir -p "$tmp/srv"
/usr/bin/python3 "$server" --port 0 --descriptors "$descriptors" --otlp-python "$otlp_python" --out "$tmp/srv" &
pids+=($!)
until [ -e "$tmp/srv/port" ]; do sleep 0.1; done
port=$(cat "$tmp/srv/port")
"$arcprof" push -i "$store" "http://127.0.0.1:$port" >"$tmp/pyroscope.out"
"$arcprof" push -i "$store" "otlp+http://127.0.0.1:$port" >"$tmp/otlp.out"

/usr/bin/python3 - "$tmp/srv/requests.jsonl" "$store" <<'EOF'
import glob, json, os, sys
log, store = sys.argv[1], sys.argv[2]
pyro, otlp, otlp_raw, samples = [], [], [], []
for line in open(log):
    r = json.loads(line)
    if r["path"] == "/push.v1.PusherService/Push":
        pyro.append(r["body_bytes"])
    elif r["path"] == "/v1development/profiles":
        otlp.append(r["body_bytes"])
        otlp_raw.append(r.get("decoded_bytes", 0))
        samples.append(r["otlp"]["totals"].get("samples", 0))
files = [os.path.getsize(f) for f in sorted(glob.glob(os.path.join(store, "*.db")))]
n = len(files)
assert n and len(pyro) == n and len(otlp) == n, (n, len(pyro), len(otlp))
mean = lambda xs: sum(xs) / len(xs)
s = mean(samples)
print("windows: %d, samples per window: %.0f" % (n, s))
for name, xs in (("store window file", files), ("Pyroscope push request", pyro),
                 ("OTLP request (gzip)", otlp), ("OTLP request (uncompressed)", otlp_raw)):
    print("%-30s mean %9.0f B  min %9d  max %9d  per sample %5.1f B" % (name, mean(xs), min(xs), max(xs),
                                                                        mean(xs) / s if s else 0))
print("OTLP gzip / Pyroscope: %.2f" % (mean(otlp) / mean(pyro)))
EOF
