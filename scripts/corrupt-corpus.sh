#!/usr/bin/env bash
# Reliability figures for damaged captures: RUNS copies of CAPTURE, each with
# one random kind of damage (a bit flip, a run of overwritten bytes, a
# truncation), are read by `arcprof report`. Counts: rejected with one line
# and exit 2, accepted with the very same report as the intact file, accepted
# with a DIFFERENT report (a silent wrong answer: must be 0), crashes or other
# exits (must be 0); and the slowest run and largest RSS.
# Usage: scripts/corrupt-corpus.sh ARCPROF CAPTURE [RUNS] [SEED]
set -euo pipefail
arcprof=${1:?arcprof binary} capture=${2:?capture} runs=${3:-1000} seed=${4:-1}
work=$(mktemp -d /tmp/arcprof-corpus-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$arcprof" report -i "$capture" --min 0 > "$work/reference.txt"
python3 - "$arcprof" "$capture" "$runs" "$seed" "$work" <<'PY'
import os, random, resource, subprocess, sys, time
arcprof, capture, runs, seed, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
data = open(capture, "rb").read()
reference = open(f"{work}/reference.txt", "rb").read()
rng = random.Random(seed)
counts = {"rejected": 0, "same": 0, "different": 0, "crash_or_other": 0, "multi_line_error": 0}
slowest = 0.0
for i in range(runs):
    b = bytearray(data)
    kind = rng.choice(["flip", "flip", "overwrite", "truncate"])
    if kind == "flip":
        at = rng.randrange(len(b)); b[at] ^= 1 << rng.randrange(8)
    elif kind == "overwrite":
        at = rng.randrange(len(b)); n = rng.randrange(1, 64)
        for k in range(at, min(at + n, len(b))): b[k] = rng.randrange(256)
    else:
        b = b[:rng.randrange(len(b))]
    path = f"{work}/damaged.db"
    open(path, "wb").write(b)
    start = time.time()
    r = subprocess.run([arcprof, "report", "-i", path, "--min", "0"], capture_output=True, timeout=120)
    slowest = max(slowest, time.time() - start)
    if r.returncode == 2 and r.stderr.count(b"\n") == 1:
        counts["rejected"] += 1
    elif r.returncode == 2:
        counts["multi_line_error"] += 1
    elif r.returncode == 0 and r.stdout == reference:
        counts["same"] += 1
    elif r.returncode == 0:
        counts["different"] += 1
        open(f"/tmp/arcprof-corpus-different-{seed}-{i}.db", "wb").write(b)
    else:
        counts["crash_or_other"] += 1
        open(f"/tmp/arcprof-corpus-crash-{seed}-{i}.db", "wb").write(b)
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"runs={runs} capture_bytes={len(data)} " + " ".join(f"{k}={v}" for k, v in counts.items()) +
      f" slowest_s={slowest:.2f} max_rss_mb={rss_mb:.0f}")
sys.exit(1 if counts["different"] or counts["crash_or_other"] or counts["multi_line_error"] else 0)
PY
