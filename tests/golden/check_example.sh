#!/usr/bin/env bash
# Golden run of one example: runs examples/NAME/run.sh with $CLUSTERSIM pointing at the built
# binary, in a scratch directory, and compares what it prints with examples/NAME/expected-output.txt,
# and each file it writes that the example folder also holds (a chart its README shows) with
# that file, so that neither can drift from what the code produces.
#   check_example.sh EXAMPLE_DIR CLUSTERSIM_BINARY [--update]
set -euo pipefail
dir=$(cd "$1" && pwd)
export CLUSTERSIM=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
actual="$work/actual.txt"
(cd "$work" && OUT_DIR="$work" EXAMPLE_DIR="$dir" bash "$dir/run.sh") >"$actual" 2>&1
written=()
for f in "$work"/*; do
  name=$(basename "$f")
  [ "$name" != actual.txt ] && [ -f "$dir/$name" ] && written+=("$name")
done
if [ "${3:-}" = "--update" ]; then
  cp "$actual" "$dir/expected-output.txt"
  for name in "${written[@]}"; do cp "$work/$name" "$dir/$name"; done
  echo "updated $dir/expected-output.txt ${written[*]}"
  exit 0
fi
status=0
if ! diff -u "$dir/expected-output.txt" "$actual"; then
  echo "golden: $(basename "$dir") differs from expected-output.txt (scripts/update-golden.sh refreshes it)" >&2
  status=1
fi
for name in "${written[@]}"; do
  if ! cmp -s "$dir/$name" "$work/$name"; then
    echo "golden: $(basename "$dir")/$name differs from what run.sh writes (scripts/update-golden.sh refreshes it)" >&2
    status=1
  fi
done
exit $status
