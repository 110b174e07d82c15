#!/usr/bin/env bash
# Installs the Debian 12 packages arcprof needs to build, test and benchmark.
# Idempotent: only packages that are missing are installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang llvm lld libclang-rt-14-dev
  libbpf-dev bpftool
  libelf-dev libdw-dev elfutils
  libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  zlib1g-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler
  linux-perf procps psmisc binutils time
  libbpf-tools
  openjdk-17-jdk-headless nodejs
  chromium golang-go
  debuginfod libdebuginfod-dev
  libcap2-bin util-linux systemd
  libcurl4-openssl-dev python3-protobuf
  bpftrace
  libcapstone-dev
  libjemalloc2 libjemalloc-dev libtcmalloc-minimal4
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root (sudo make ...) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || apt-get update
apt-get install -y -qq --no-install-recommends "${missing[@]}"
