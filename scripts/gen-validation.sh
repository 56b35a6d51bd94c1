#!/usr/bin/env bash
# Regenerates docs/validation.md from the reference measurements (data/reference).
#   scripts/gen-validation.sh [BUILD_DIR]     (default build/test, built if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/test}
if [ ! -x "$dir/app/clustersim" ]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target clustersim
fi
"$dir/app/clustersim" report validation --out docs/validation.md
echo "wrote docs/validation.md"
