#!/usr/bin/env bash
# Runs every test (unit, runtime as root with real BPF, fuzzers briefly).
# Usage: scripts/run-tests.sh BUILD_DIR [ctest args...]
set -euo pipefail
build=${1:-build}
shift || true
if [ "$(id -u)" -ne 0 ]; then
  echo "run-tests: the runtime tests load BPF programs: run as root (sudo make test)" >&2
  exit 1
fi
cd "$build"
# Unit tests in parallel, runtime tests (labelled runtime, RUN_SERIAL) one at a time.
ctest --output-on-failure --timeout 600 -j2 "$@"
