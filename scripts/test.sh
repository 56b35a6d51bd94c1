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
  # A unity build: each library's sources compiled eight to a translation unit, so the headers
  # they share (the standard library, fmt, yaml-cpp, Catch2) are parsed and their templates
  # instantiated once per eight sources (docs/building.md has the measurements).
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLUSTERSIM_WERROR=ON -DCMAKE_UNITY_BUILD=ON
         -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
  # Debug information is line tables and functions only (-g1, RelWithDebInfo's -O2 and
  # -DNDEBUG kept), as in the sanitizer build: these binaries are tested, seldom debugged, and
  # a backtrace still names files and lines. With GCC the full -g made the test sources (Catch2
  # expansions mostly) 22% slower to compile and the test binary 157 MB instead of 55 (GCC
  # also tracks no variable locations at -g1, what -fno-var-tracking-assignments turned off
  # before); the machine code is the same (docs/building.md has the measurements). A
  # RelWithDebInfo build of your own keeps -g.
  flags+=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
fi
jobs=$(nproc)
cmake --build "$dir" -j "$jobs"
ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${skip[@]}"
