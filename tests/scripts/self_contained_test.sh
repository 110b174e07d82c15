#!/usr/bin/env bash
# The repository stands on its own: no file cites a path outside it (the team's
# shared folders, absolute paths of a build machine). Format facts live in
# docs/formats.md. Usage: self_contained_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?source dir}
cd "$src"
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "SKIP: not a git checkout"; exit 77
fi
# Citations of the team's shared documents, relative or absolute, and of the
# development machine's work folder. The folder names are assembled here so
# that this file does not itself read as such a citation.
shared=shared work=work
pattern="\\.\\./${shared}/|/${shared}/docs|/${work}/"
if hits=$(git grep -nE "$pattern" -- . ':!tests/scripts/self_contained_test.sh'); then
  echo "FAIL: files cite paths outside the repository:" >&2
  echo "$hits" >&2
  exit 1
fi
# Every page under docs/ that a source or document names exists.
missing=0
while read -r doc; do
  [ -f "$doc" ] || { echo "FAIL: $doc is cited but does not exist" >&2; missing=1; }
done < <(git grep -ohE 'docs/[A-Za-z0-9_-]+\.md' | sort -u)
[ $missing = 0 ] || exit 1
echo PASS
