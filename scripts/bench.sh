#!/usr/bin/env bash
# Builds the benchmarks (Release) and runs them all; the README's performance section quotes
# their output.   scripts/bench.sh [FILTER]   (a regex on benchmark names)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir=build/bench
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCLUSTERSIM_BUILD_BENCH=ON -DCLUSTERSIM_BUILD_TESTS=OFF \
  -DCLUSTERSIM_WITH_CUDA=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)"
export CLUSTERSIM_CONFIG_DIR="$PWD/configs"
for b in "$dir"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_filter="${1:-.}" --benchmark_counters_tabular=true
done
