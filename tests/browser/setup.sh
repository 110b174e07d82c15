#!/usr/bin/env bash
# Installs the pinned npm packages of the browser tests (package-lock.json:
# playwright-core, speedscope) into DEST, a folder of the build directory.
# Exit 77 (ctest: skipped) with the reason when npm or the registry is
# missing, except under CI=true where that is a failure.
set -euo pipefail
dest=${1:?usage: setup.sh DEST}
src=$(cd "$(dirname "$0")" && pwd)

skip() {
  if [ "${CI:-}" = true ]; then
    echo "browser setup: $1 (CI=true: must not skip)" >&2
    exit 1
  fi
  echo "browser setup: SKIP: $1" >&2
  exit 77
}

command -v npm >/dev/null || skip "npm is missing (Debian package npm; run scripts/install-deps.sh)"
mkdir -p "$dest"
stamp="$dest/node_modules/.arcprof-package-lock.json"
if [ -f "$stamp" ] && cmp -s "$src/package-lock.json" "$stamp"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dest/"
# --ignore-scripts: nothing from the registry runs at install time.
(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) ||
  skip "npm ci failed in $dest (is the npm registry reachable?)"
cp "$src/package-lock.json" "$stamp"
