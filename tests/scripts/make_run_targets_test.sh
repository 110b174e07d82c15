#!/usr/bin/env bash
# `make run` builds what the demo runs, not every test, fuzzer and benchmark
# (issue: a new user waited for all 188 targets before seeing a report).
# Usage: make_run_targets_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=${1:?source dir} build=${2:?build dir}
fail() { echo "FAIL: $*" >&2; exit 1; }

# The build command `make run` issues (dry run: nothing is built or installed).
line=$(make -s -n -C "$src" run BUILD="$build" | grep -E '^cmake --build ' | head -1)
[ -n "$line" ] || fail "make run issues no 'cmake --build' command"
case "$line" in *--target*) ;; *) fail "make run builds everything: $line" ;; esac
targets=${line#*--target }

# Every command those targets need, against every command of the whole tree.
demo=$(ninja -C "$build" -t commands $targets)
all=$(ninja -C "$build" -t commands)
n_demo=$(grep -c . <<<"$demo" || true)
n_all=$(grep -c . <<<"$all" || true)
echo "make run: $n_demo build commands of $n_all ($targets)"
# Test sources other than the demo's programs, fuzzers and benchmarks stay unbuilt.
if grep -E "$src/(bench/|tests/(symbolize|reports|loader|java)/)|fuzz" <<<"$demo" | head -3 | grep .; then
  fail "make run compiles tests, fuzzers or benchmarks"
fi
grep -q "ground_truth" <<<"$demo" || fail "make run does not build the demo's workload program"
grep -q "libarcprof_jvmti" <<<"$demo" || fail "make run does not build the JVMTI agent"
[ $((n_demo * 2)) -lt "$n_all" ] || fail "make run builds $n_demo of $n_all commands"
echo PASS
