#!/bin/sh
# Proves scripts/check-layers.sh both passes on a layered tree and fails on an
# upward include: copies the source folders into a fresh private directory,
# checks the copy (must pass), adds `#include "reports/tprof.h"` to a model
# file (model is below reports) and checks again (must fail naming that line);
# then, in a fresh copy, `#include "symbolize/symbolizer.h"` in the unwinder
# (unwind/ sees address spaces, never the symbolizer) must fail the same way;
# the JVMTI agent (runtimes/java/agent/, a layer of its own inside
# runtimes/) including the runtimes' interface must fail too, and so must the
# unwinder including a runtime (runtimes step their frames through
# unwind/frame_stepper.h; the unwinder knows none of them); and the loader
# including one runtime's folder rather than runtimes/runtime.h (a runtime is
# its folder plus a line in runtimes/registry.cpp).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy() {
  rm -rf "$work"/*
  for d in common bpf spaces unwind symbolize runtimes model store loader reports push cli scripts; do
    [ -d "$repo/$d" ] && cp -R "$repo/$d" "$work/$d"
  done
}
copy
if ! "$work/scripts/check-layers.sh" "$work"; then
  echo "FAIL: the unmodified tree does not pass the layer check" >&2
  exit 1
fi
printf '#include "reports/tprof.h"\n' >> "$work/model/profile.h"
if out=$("$work/scripts/check-layers.sh" "$work" 2>&1); then
  echo "FAIL: an upward include (model -> reports) passed the layer check" >&2
  exit 1
fi
case $out in
  *'model/profile.h:'*'model may not include "reports/tprof.h"'*) ;;
  *) echo "FAIL: the check failed without naming the bad include: $out" >&2; exit 1 ;;
esac
echo "ok: upward include rejected: $out"

copy
printf '#include "symbolize/symbolizer.h"\n' >> "$work/unwind/unwinder.h"
if out=$("$work/scripts/check-layers.sh" "$work" 2>&1); then
  echo "FAIL: unwind/ including symbolize/ passed the layer check" >&2
  exit 1
fi
case $out in
  *'unwind/unwinder.h:'*'unwind may not include "symbolize/symbolizer.h"'*) ;;
  *) echo "FAIL: the check failed without naming the bad include: $out" >&2; exit 1 ;;
esac
echo "ok: unwind/ including symbolize/ rejected: $out"

copy
printf '#include "runtimes/runtime.h"\n' >> "$work/runtimes/java/agent/agent.cpp"
if out=$("$work/scripts/check-layers.sh" "$work" 2>&1); then
  echo "FAIL: the JVMTI agent including runtimes/ passed the layer check" >&2
  exit 1
fi
case $out in
  *'runtimes/java/agent/agent.cpp:'*'runtimes/java/agent may not include "runtimes/runtime.h"'*) ;;
  *) echo "FAIL: the check failed without naming the bad include: $out" >&2; exit 1 ;;
esac
echo "ok: the agent including runtimes/ rejected: $out"

copy
printf '#include "runtimes/java/hotspot_stepper.h"\n' >> "$work/unwind/unwinder.cpp"
if out=$("$work/scripts/check-layers.sh" "$work" 2>&1); then
  echo "FAIL: the unwinder including a runtime passed the layer check" >&2
  exit 1
fi
case $out in
  *'unwind/unwinder.cpp:'*'unwind may not include "runtimes/java/hotspot_stepper.h"'*) ;;
  *) echo "FAIL: the check failed without naming the bad include: $out" >&2; exit 1 ;;
esac
echo "ok: the unwinder including a runtime rejected: $out"

copy
printf '#include "runtimes/java/java_runtime.h"\n' >> "$work/loader/runtime_extension.cpp"
if out=$("$work/scripts/check-layers.sh" "$work" 2>&1); then
  echo "FAIL: the loader including one runtime's folder passed the layer check" >&2
  exit 1
fi
case $out in
  *'loader/runtime_extension.cpp:'*'loader may not include "runtimes/java/java_runtime.h" (one runtime'*) ;;
  *) echo "FAIL: the check failed without naming the bad include: $out" >&2; exit 1 ;;
esac
echo "ok: the loader including a runtime's folder rejected: $out"
