#!/usr/bin/env bash
# Builds clustersim with every warning an error and runs every test.
#   scripts/test.sh              the normal test build (build/test)
#   scripts/test.sh --sanitize   the same with AddressSanitizer + UBSan (build/asan)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

skip=()
if [ "${1:-}" = "--sanitize" ]; then
  # Configured by scripts/sanitize-config.sh, which scripts/fuzz.sh shares: the CUDA runners
  # are compiled by the normal build; the sanitizer build skips them, and the benchmarks.
  source scripts/sanitize-config.sh
  dir=$asan_dir
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Tests named "(slow)" (the training-step fit: hundreds of evaluations of ~300 simulated
  # steps) take minutes in a Debug build under ASan; the normal build runs them.
  skip=(-E '\(slow\)')
else
  dir=build/test
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERSIM_WERROR=ON >/dev/null
fi
jobs=$(nproc)
cmake --build "$dir" -j "$jobs"
ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${skip[@]}"
