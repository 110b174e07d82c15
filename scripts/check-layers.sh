#!/bin/sh
# Fails when a #include "..." in a source folder crosses a layer upward.
# The layers and what each may include are written in docs/design.md
# ("Layers"); keep the table below and that section the same.
#
# Usage: scripts/check-layers.sh [REPO_ROOT]
# Prints one line per bad include ("file:line: LAYER may not include TARGET")
# and exits 1 when there is any; exits 0 and prints nothing otherwise.
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# allowed LAYER -> the layers its files may include (itself always included).
allowed() {
  case $1 in
    common) echo "common" ;;
    bpf) echo "bpf" ;;
    spaces) echo "common spaces" ;;
    unwind) echo "common spaces unwind" ;;
    symbolize) echo "common spaces symbolize" ;;
    runtimes) echo "common bpf spaces unwind symbolize runtimes" ;;
    model) echo "common model" ;;
    store) echo "common model store" ;;
    loader) echo "common bpf spaces unwind symbolize runtimes model store loader" ;;
    reports) echo "common model store reports" ;;
    push) echo "common model store reports push" ;;
    cli) echo "common bpf spaces unwind symbolize runtimes model store loader reports push cli" ;;
    runtimes/java/agent) echo "symbolize runtimes/java/agent" ;;  # the jitdump format only
    *) return 1 ;;
  esac
}

# Above runtimes/, a runtime is reached through its interface
# (runtimes/runtime.h, MakeRuntimes) and never through its own folder, so that
# adding a runtime is its folder plus a line in runtimes/registry.cpp. The
# files that may include one runtime's folder, and why:
#   loader/java_trace.cpp  `arcprof trace` of a Java method: the agent's probe
#                          protocol over the attach (docs/java.md)
#   cli/java_cli.cpp       the `arcprof java` command (attach, agent path)
runtime_folder_users="loader/java_trace.cpp cli/java_cli.cpp"

# A layer inside another one's folder (the JVMTI agent, a separate .so, in
# runtimes/java/) is checked as its own layer, not as its parent's.
layers="common bpf spaces unwind symbolize runtimes model store loader reports push cli runtimes/java/agent"
report=$(for layer in $layers; do
  [ -d "$layer" ] || continue
  ok=$(allowed "$layer")
  prune=
  for inner in $layers; do
    case $inner in "$layer"/*) prune="$prune -path $inner -prune -o" ;; esac
  done
  # Every C/C++ source and header of the layer, with its quoted includes.
  for file in $(find "$layer" $prune -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) -print | sort); do
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" 2>/dev/null |
      sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2/' |
      while read -r line target; do
        case $target in
          */*) dir=${target%%/*} ;;
          *) dir= ;;
        esac
        # Which layer the included file belongs to.
        if [ -n "$dir" ] && allowed "$dir" >/dev/null 2>&1; then
          to=$dir
        elif [ -e "$(dirname "$file")/$target" ]; then
          to=$layer  # next to the includer
        elif [ -z "$dir" ] && { [ -e "bpf/$target" ] || [ "$target" = vmlinux.h ]; }; then
          to=bpf     # shared BPF structs (bpf/ is on the include path)
        elif [ -z "$dir" ] && [ "${target%.skel.h}" != "$target" ]; then
          to=bpf     # generated BPF skeletons
        elif [ "$target" = "proto/profile.pb.h" ]; then
          to=reports # generated from reports/proto/profile.proto
        elif [ "${target#opentelemetry/proto/}" != "$target" ] && [ "${target%.pb.h}" != "$target" ]; then
          to=reports # generated from reports/proto/opentelemetry/ (OTLP profiles)
        else
          echo "$file:$line: cannot tell which layer \"$target\" belongs to (add it to scripts/check-layers.sh)"
          echo bad
          continue
        fi
        case " $ok " in
          *" $to "*) ;;
          *) echo "$file:$line: $layer may not include \"$target\" ($to is above it; docs/design.md, Layers)"
             echo bad
             continue ;;
        esac
        case $layer:$target in
          runtimes*) ;;
          *:runtimes/*/*)
            case " $runtime_folder_users " in
              *" $file "*) ;;
              *) echo "$file:$line: $layer may not include \"$target\" (one runtime's folder: use runtimes/runtime.h; docs/design.md, Layers)"
                 echo bad ;;
            esac ;;
        esac
      done
  done
done)
if printf '%s\n' "$report" | grep -q '^bad$'; then
  printf '%s\n' "$report" | grep -v '^bad$' >&2
  exit 1
fi
exit 0
