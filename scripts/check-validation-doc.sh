#!/usr/bin/env bash
# Fails when docs/validation.md differs from what `clustersim report validation` prints now.
#   scripts/check-validation-doc.sh [BUILD_DIR]   (default build/test)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/test}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$dir/app/clustersim" report validation --out "$tmp"
if ! diff -u docs/validation.md "$tmp" >/dev/null; then
  echo "check-validation-doc: docs/validation.md is out of date; run scripts/gen-validation.sh" >&2
  diff -u docs/validation.md "$tmp" | head -40 >&2
  exit 1
fi
echo "docs/validation.md is up to date"
