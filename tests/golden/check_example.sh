#!/usr/bin/env bash
# Golden run of one example: runs examples/NAME/run.sh with $CLUSTERSIM pointing at the built
# binary, in a scratch directory, and compares what it prints with examples/NAME/expected-output.txt.
#   check_example.sh EXAMPLE_DIR CLUSTERSIM_BINARY [--update]
set -euo pipefail
dir=$(cd "$1" && pwd)
export CLUSTERSIM=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
actual="$work/actual.txt"
(cd "$work" && EXAMPLE_DIR="$dir" bash "$dir/run.sh") >"$actual" 2>&1
if [ "${3:-}" = "--update" ]; then
  cp "$actual" "$dir/expected-output.txt"
  echo "updated $dir/expected-output.txt"
  exit 0
fi
if ! diff -u "$dir/expected-output.txt" "$actual"; then
  echo "golden: $(basename "$dir") differs from expected-output.txt (scripts/update-golden.sh refreshes it)" >&2
  exit 1
fi
