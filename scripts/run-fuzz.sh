#!/usr/bin/env bash
# `make fuzz`: runs every libFuzzer target of the build for FUZZ_SECONDS each
# (default 600), with the same corpora and limits as its short run in
# `make test`, one after the other. Prints one line per fuzzer (runs, speed,
# corpus, result) and writes them to BUILD/fuzz-report.txt. Crashes leave their
# input in BUILD/fuzz-artifacts/. Exit 1 when any fuzzer failed. FUZZ_JOBS=N
# runs N fuzzers at a time (default 1).
# Usage: scripts/run-fuzz.sh BUILD_DIR [SECONDS] [NAME_REGEX]
set -euo pipefail
build=${1:-build} seconds=${2:-${FUZZ_SECONDS:-600}} only=${3:-${FUZZ_ONLY:-.}}
build=$(cd "$build" && pwd)
mkdir -p "$build/fuzz-artifacts"
python3 - "$build" "$seconds" "$only" <<'PY'
import concurrent.futures, os, re, shlex, subprocess, sys, time
build, seconds, only = sys.argv[1], int(sys.argv[2]), sys.argv[3]
listing = subprocess.run(["ctest", "-N", "-V", "-R", "fuzz"], cwd=build,
                         capture_output=True, text=True).stdout
commands = []
for line in listing.splitlines():
    m = re.search(r"Test command: (.*)$", line)
    if m:
        argv = shlex.split(m.group(1))
        name = argv[0].rsplit("/", 1)[-1]
        if re.search(only, name) and not name.endswith(".sh"):  # not the smoke test of this script
            commands.append((name, argv))
def run(item):
    name, argv = item
    # The short run's limits go; the time limit is ours.
    args = [a for a in argv[1:] if not a.startswith(("-runs=", "-max_total_time=", "-artifact_prefix="))]
    cmd = [argv[0], f"-max_total_time={seconds}", "-print_final_stats=1",
           f"-artifact_prefix={build}/fuzz-artifacts/{name}-"] + args
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    took = time.time() - start
    stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", r.stderr))
    corpus = re.findall(r"(?:INITED|DONE).*?corp: (\d+)/(\S+)", r.stderr)
    runs = int(stats.get("number_of_executed_units", 0))
    ok = r.returncode == 0
    line = (f"{name}: {'ok' if ok else 'FAILED (exit %d)' % r.returncode} runs={runs} "
            f"seconds={took:.0f} exec/s={runs / max(took, 1e-9):.0f} "
            f"peak_rss_mb={stats.get('peak_rss_mb', '?')} corpus={corpus[-1][0] if corpus else '?'}")
    print(line, flush=True)
    if not ok:
        print("\n".join(r.stderr.splitlines()[-20:]), file=sys.stderr)
    return ok, line
jobs = max(1, int(os.environ.get("FUZZ_JOBS", "1")))
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    results = list(pool.map(run, commands))
failed = not all(ok for ok, _ in results)
report = [line for _, line in results]
open(f"{build}/fuzz-report.txt", "w").write("\n".join(report) + "\n")
sys.exit(1 if failed else 0)
PY
