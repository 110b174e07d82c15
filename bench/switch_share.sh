#!/usr/bin/env bash
# The kernel's finish_task_switch as a share of a workload's samples, arcprof
# against perf on the same execution, and where the difference comes from.
# Each workload (sort of 80 MB of text, 8 times; zstd -12 -T1 of 60 MB of
# libraries, 3 times) runs four times, and each time two samplers see the
# same execution at 999 Hz:
#   1. arcprof record (command defaults: off-CPU on, so its sched_switch
#      program is attached) around perf record -g (per-task events);
#   2. the same with arcprof --no-off-cpu (no sched_switch program of ours);
#   3. perf record -a -g (per-CPU events, as arcprof samples) around perf
#      record -g: no BPF at all;
#   4. as 3 with an empty tp_btf/sched_switch BPF program attached (built
#      here with clang and libbpf): does any program there change it?
# The share is of the workload's samples (comm sort / zstd) whose leaf is
# finish_task_switch; perf's from `perf script`, arcprof's from its folded
# export. On a machine without a PMU both use cpu-clock.
# Usage: bench/switch_share.sh [BUILD_DIR]   (as root; WORKLOADS="sort" for one)
set -euo pipefail
build=$(realpath "${1:-build}")
arcprof=$build/arcprof
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$arcprof" ] || { echo "switch_share: $arcprof missing: build first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "switch_share: records with BPF: run as root" >&2; exit 1; }
command -v perf > /dev/null || { echo "switch_share: perf missing (scripts/install-deps.sh)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/arcprof-switch-share.XXXXXX)
empty_pid=
cleanup() {
  [ -n "$empty_pid" ] && kill "$empty_pid" 2> /dev/null && wait "$empty_pid" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# The empty sched_switch program and its loader (detaches when it exits).
cat > "$tmp/empty.bpf.c" << 'BPF'
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
char LICENSE[] SEC("license") = "GPL";
SEC("tp_btf/sched_switch")
int BPF_PROG(empty_switch, bool preempt, struct task_struct *prev, struct task_struct *next) { return 0; }
BPF
cat > "$tmp/empty.c" << 'LOADER'
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }
int main(int argc, char **argv) {
  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj || bpf_object__load(obj)) return 1;
  struct bpf_link *link = bpf_program__attach(bpf_object__find_program_by_name(obj, "empty_switch"));
  if (!link) return 1;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  printf("attached\n");
  fflush(stdout);
  while (!stop) pause();
  bpf_link__destroy(link);
  bpf_object__close(obj);
  return 0;
}
LOADER
cp "$src/vmlinux/vmlinux_x86_64.h" "$tmp/vmlinux.h"
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$tmp" -c "$tmp/empty.bpf.c" -o "$tmp/empty.bpf.o"
cc -O1 "$tmp/empty.c" -o "$tmp/empty" -lbpf

base64 -w 60 /dev/urandom | head -c 80M > "$tmp/sort.in" || true  # base64 ends on SIGPIPE
cat /usr/lib/x86_64-linux-gnu/lib*.so* 2> /dev/null | head -c 60M > "$tmp/zstd.in" || true
declare -A cmd=(
  [sort]="for i in 1 2 3 4 5 6 7 8; do sort $tmp/sort.in > /dev/null; done"
  [zstd]="for i in 1 2 3; do zstd -q -12 -T1 -c $tmp/zstd.in > /dev/null; done")

perf_share() {  # perf.data comm -> "share% (n/total)"
  perf script -i "$1" --comm "$2" -F ip,sym 2> /dev/null | awk '
    BEGIN { first = 1 }
    /^$/ { first = 1; next }
    { if (first) { n++; if ($2 ~ /^finish_task_switch/) f++; first = 0 } }
    END { printf "%.2f%% (%d/%d)", n ? 100 * f / n : 0, f, n }'
}
arcprof_share() {  # capture comm
  "$arcprof" export -i "$1" --format folded --comm "$2" 2> /dev/null | awk '
    { c = $NF; $NF = ""; n += c; k = split($0, fr, ";"); if (fr[k] ~ /^finish_task_switch/) f += c }
    END { printf "%.2f%% (%d/%d)", n ? 100 * f / n : 0, f, n }'
}

echo "## finish_task_switch share of the workload's samples, same execution, 999 Hz"
echo
echo "| workload | run | sampler A | A | perf record -g (per-task) | load |"
echo "|---|---|---|---|---|---|"
for w in ${WORKLOADS:-sort zstd}; do
  t=$tmp/$w
  "$arcprof" record -q -o "$t.1.db" -- perf record -q -F 999 -g -o "$t.1.perf" -- sh -c "${cmd[$w]}"
  echo "| $w | 1 | arcprof (off-CPU on) | $(arcprof_share "$t.1.db" "$w") | $(perf_share "$t.1.perf" "$w") | $(cut -d' ' -f1 /proc/loadavg) |"
  "$arcprof" record -q --no-off-cpu -o "$t.2.db" -- perf record -q -F 999 -g -o "$t.2.perf" -- sh -c "${cmd[$w]}"
  echo "| $w | 2 | arcprof --no-off-cpu | $(arcprof_share "$t.2.db" "$w") | $(perf_share "$t.2.perf" "$w") | $(cut -d' ' -f1 /proc/loadavg) |"
  perf record -q -a -F 999 -g -o "$t.3a.perf" -- perf record -q -F 999 -g -o "$t.3.perf" -- sh -c "${cmd[$w]}" 2> /dev/null
  echo "| $w | 3 | perf -a (per-CPU) | $(perf_share "$t.3a.perf" "$w") | $(perf_share "$t.3.perf" "$w") | $(cut -d' ' -f1 /proc/loadavg) |"
  "$tmp/empty" "$tmp/empty.bpf.o" > "$tmp/empty.out" & empty_pid=$!
  for _ in $(seq 50); do grep -q attached "$tmp/empty.out" 2> /dev/null && break; sleep 0.1; done
  grep -q attached "$tmp/empty.out" || { echo "switch_share: the empty sched_switch program did not attach" >&2; exit 1; }
  perf record -q -a -F 999 -g -o "$t.4a.perf" -- perf record -q -F 999 -g -o "$t.4.perf" -- sh -c "${cmd[$w]}" 2> /dev/null
  kill "$empty_pid"; wait "$empty_pid" || true; empty_pid=
  echo "| $w | 4 | perf -a + empty sched_switch program | $(perf_share "$t.4a.perf" "$w") | $(perf_share "$t.4.perf" "$w") | $(cut -d' ' -f1 /proc/loadavg) |"
done
