#!/usr/bin/env bash
# CPython named with no flag (docs/python.md), per interpreter installed
# (Debian's python3.11, pyenv's 2.7 and 3.6-3.13):
#  - complete chains: of the samples of tests/runtimes/programs/split.py
#    (`record -F 999 -- python split.py 4`) that carry Python frames, the
#    share whose Python frames are exactly <module>;drive;alpha|beta and
#    whose stack starts at _start; the alpha share (truth 75%);
#  - the same with `-X perf` (3.12+: perf-map trampolines);
#  - BPF ns per sample: the sampler program's run time per run
#    (kernel.bpf_stats_enabled=1) recording the program, with the frame walk
#    and with --no-runtimes (native only);
#  - slowdown at 999 Hz: the CPU seconds of split.py rounds=$ROUNDS (fixed
#    work, default 2000: about 1.1 s of CPU for 3.11; single runs spread
#    +-10% on this VM, so take 15 runs or more)
#    under `record -F 999 --` with runtimes and with --no-runtimes, and under
#    the floor (an empty BPF probe at 999 Hz on every CPU: bpftrace
#    'profile:hz:999 {}'), against no recording (medians of RUNS alternating
#    runs).
# Usage: sudo bench/python_bench.sh [BUILD] [RUNS] [ONLY]  (ONLY: a regex of
# labels, e.g. 'pyenv-3.1[23]')
set -euo pipefail
build=${1:-build}
runs=${2:-3}
only=${3:-.}
arcprof="$build/arcprof"
here=$(cd "$(dirname "$0")" && pwd)
split="$here/../tests/runtimes/programs/split.py"
tmp=$(mktemp -d)
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q kernel.bpf_stats_enabled="$stats_was"; rm -rf "$tmp"' EXIT

interpreters=()
[ -x /usr/bin/python3.11 ] && interpreters+=("debian-3.11=/usr/bin/python3.11")
for v in "$HOME"/.pyenv/versions/2.7.* "$HOME"/.pyenv/versions/3.*; do
  [ -d "$v" ] || continue
  m=$(basename "$v" | cut -d. -f1-2)
  [ -x "$v/bin/python$m" ] && interpreters+=("pyenv-$m=$v/bin/python$m")
done

# The empty-probe floor: an empty program on a 999 Hz timer on every CPU.
floor_run() {
  bpftrace -e 'profile:hz:999 { }' >"$tmp/bt.out" 2>&1 &
  local bt=$!
  for _ in $(seq 100); do grep -q Attaching "$tmp/bt.out" && break; sleep 0.1; done
  sleep 0.5
  "$@"
  kill -INT "$bt" 2>/dev/null || true
  wait "$bt" 2>/dev/null || true
}

median() { sort -g | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]}'; }

# Complete chains and the alpha share from a capture's folded stacks.
chains() {
  "$arcprof" export --format folded -i "$1" --comm "$2" 2>/dev/null | awk '
    { count = $NF; line = $0; sub(/ [0-9]+$/, "", line); n = split(line, f, ";")
      py = ""; for (i = 2; i <= n; i++) if (f[i] ~ /_\[j\]$/ && f[i] !~ /^py::/) { name = f[i]; sub(/_\[j\]$/, "", name); py = py (py == "" ? "" : ";") name }
      if (py == "") next
      total += count
      if (py ~ /;alpha$/) a += count; if (py ~ /;beta$/) b += count
      if ((py == "<module>;drive;alpha" || py == "<module>;drive;beta") && (f[2] == "_start" || f[2] == "start_thread")) full += count }
    END { if (total) printf "%.2f%% of %d, alpha %.1f%%", 100 * full / total, total, (a + b) ? 100 * a / (a + b) : 0; else print "no Python samples" }'
}

# The sampler's ns per run while recording a command (ids new with this recording).
bpf_ns() {
  sysctl -q kernel.bpf_stats_enabled=1
  ids() { { bpftool prog show name on_sample 2>/dev/null || true; } | sed -n 's/^\([0-9]*\): .*/\1/p' | sort; }
  local before ours s1 s2
  before=$(ids)
  "$arcprof" record -q -F 999 --no-ptt "$@" -o "$tmp/ns.db" -- "$py" "$split" 10 >/dev/null 2>&1 &
  local rec=$!
  # Loading takes seconds on a loaded machine: wait for our program, then
  # for the interpreter to be running.
  for _ in $(seq 100); do
    ours=$(comm -13 <(echo "$before") <(ids) | head -1)
    [ -n "$ours" ] && break
    sleep 0.2
  done
  sleep 1
  snap() { bpftool prog show id "$ours" 2>/dev/null | sed -n 's/.*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2/p' | head -1; }
  s1=$(snap || true); sleep 3; s2=$(snap || true)
  wait "$rec" || true
  sysctl -q kernel.bpf_stats_enabled="$stats_was"
  awk -v a="$s1" -v b="$s2" 'BEGIN {split(a, x); split(b, y); n = y[2] - x[2]; if (n > 0) printf "%.0f", (y[1] - x[1]) / n; else print "?"}'
}

echo "python_bench: $(date -u '+%F %H:%M') load average $(cut -d' ' -f1-3 /proc/loadavg), $(git -C "$here/.." rev-parse --short HEAD)"
row='%-12s | %-28s | %-28s | %-9s | %-9s | %-8s | %-8s | %-8s\n'
printf "$row" interpreter "no flag: complete chains" "-X perf: complete chains" "BPF ns" "BPF ns" "slowdown" "slowdown" "slowdown"
printf "$row" "" "" "" "walk" "native" "walk" "native" "floor"
for entry in "${interpreters[@]}"; do
  label=${entry%%=*}
  py=${entry#*=}
  [[ $label =~ $only ]] || continue
  comm=$(basename "$py")
  "$arcprof" record -q -F 999 --no-ptt -o "$tmp/c.db" -- "$py" "$split" 4 >/dev/null 2>&1
  noflag=$(chains "$tmp/c.db" "$comm")
  perf="-"
  if "$py" -X perf -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    "$arcprof" record -q -F 999 --no-ptt -o "$tmp/p.db" -- "$py" -X perf "$split" 4 >/dev/null 2>&1
    perf=$(chains "$tmp/p.db" "$comm")
  fi
  ns_walk=$(bpf_ns)
  ns_native=$(bpf_ns --no-runtimes)
  bare=(); walk=(); native=(); floor=()
  rounds=${ROUNDS:-2000}
  for _ in $(seq "$runs"); do
    bare+=("$("$py" "$split" rounds=$rounds)")
    walk+=("$("$arcprof" record -q -F 999 --no-ptt -o "$tmp/r.db" -- "$py" "$split" rounds=$rounds 2>/dev/null | tail -1)")
    native+=("$("$arcprof" record -q -F 999 --no-ptt --no-runtimes -o "$tmp/r.db" -- "$py" "$split" rounds=$rounds 2>/dev/null | tail -1)")
    floor+=("$(floor_run "$py" "$split" rounds=$rounds | tail -1)")
  done
  b=$(printf '%s\n' "${bare[@]}" | median)
  w=$(printf '%s\n' "${walk[@]}" | median)
  n=$(printf '%s\n' "${native[@]}" | median)
  f=$(printf '%s\n' "${floor[@]}" | median)
  sw=$(awk -v a="$b" -v c="$w" 'BEGIN {printf "%+.1f%%", (c / a - 1) * 100}')
  sn=$(awk -v a="$b" -v c="$n" 'BEGIN {printf "%+.1f%%", (c / a - 1) * 100}')
  sf=$(awk -v a="$b" -v c="$f" 'BEGIN {printf "%+.1f%%", (c / a - 1) * 100}')
  printf "$row" "$label" "$noflag" "$perf" "$ns_walk" "$ns_native" "$sw" "$sn" "$sf"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
