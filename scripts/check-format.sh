#!/usr/bin/env bash
# Fails when any C++/CUDA source differs from .clang-format; prints the files that do.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
# One clang-format for all the files (starting one per file costs more than the formatting);
# only when that fails, one per file to name them.
if clang-format --dry-run --Werror $files >/dev/null 2>&1; then
  exit 0
fi
bad=()
for f in $files; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: these files need clang-format -i:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
