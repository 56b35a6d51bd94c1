#!/usr/bin/env bash
# Builds clustersim with every warning an error and runs every test.
#   scripts/test.sh              the normal test build (build/test)
#   scripts/test.sh --sanitize   the same with AddressSanitizer + UBSan (build/asan)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

dir=build/test
skip=()
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERSIM_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  dir=build/asan
  # The CUDA runners are compiled by the normal build; the sanitizer build skips them, and the
  # benchmarks, to stay fast.
  flags=(-DCMAKE_BUILD_TYPE=Debug -DCLUSTERSIM_WERROR=ON -DCLUSTERSIM_SANITIZE=ON
         -DCLUSTERSIM_WITH_CUDA=OFF -DCLUSTERSIM_BUILD_BENCH=OFF)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Tests named "(slow)" (the training-step fit: hundreds of evaluations of ~300 simulated
  # steps) take minutes in a Debug build under ASan; the normal build runs them.
  skip=(-E '\(slow\)')
fi
jobs=$(nproc)
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$jobs"
ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${skip[@]}"
