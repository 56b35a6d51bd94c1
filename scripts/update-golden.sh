#!/usr/bin/env bash
# Regenerates examples/*/expected-output.txt from the current build (after a deliberate change
# of output; review the diff before committing).   scripts/update-golden.sh [BUILD_DIR] [EXAMPLE...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/test}
shift || true
examples=("$@")
[ ${#examples[@]} -eq 0 ] && examples=(examples/*/)
for e in "${examples[@]}"; do
  [ -f "$e/run.sh" ] || continue
  tests/golden/check_example.sh "$e" "$PWD/$dir/app/clustersim" --update
done
