#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for N seconds (default 60), two at a
# time (CI has 2 cores): every input format a user hands clustersim, from tests/fuzz/corpus/.
#   units             sizes, bandwidths, times, FLOP rates (base/units.h)
#   hardware_yaml     hardware files
#   experiment_yaml   experiment files (loaded, validated, small ones simulated)
#   measurements_json measurement files (read, written, read back identical)
#   nccl_tests_log    nccl-tests logs (calibrate import)
#   import_csv        CSV tables of collectives and training steps (calibrate import)
#   kineto            PyTorch profiler traces (calibrate import)
# Skips (exit 0, with a note) where clang is not installed. The targets are part of the
# sanitizer build (scripts/sanitize-config.sh: clang, ASan + UBSan on every library they fuzz),
# so after `scripts/test.sh --sanitize` there is nothing left to compile.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found; skipping the fuzzers" >&2
  exit 0
fi
source scripts/sanitize-config.sh
dir=$asan_dir
targets=(units hardware_yaml experiment_yaml measurements_json nccl_tests_log import_csv kineto)
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
# Presets (hardware: dgx-a100) come from this checkout's configs/.
export CLUSTERSIM_CONFIG_DIR="$PWD/configs"
status=0
run_one() {
  local t=$1 work
  work=$(mktemp -d)
  cp tests/fuzz/corpus/$t/* "$work/"
  # -timeout: an input that takes seconds is a finding (an unbounded loop or read), not noise.
  local rc=0
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 "$work" >"$dir/fuzz_$t.log" 2>&1 || rc=$?
  rm -rf "$work"
  return $rc
}
# Two at a time: CI's 2 cores, and each target gets its full time on one.
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do
    run_one "$t" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    if ! wait "$p"; then
      status=1
    fi
  done
done
for t in "${targets[@]}"; do
  if grep -qE "ERROR: (libFuzzer|AddressSanitizer)|runtime error|deadly signal|ALARM: working on the last Unit" "$dir/fuzz_$t.log"; then
    echo "fuzz: fuzz_$t found a crash:" >&2
    tail -40 "$dir/fuzz_$t.log" >&2
    status=1
  else
    echo "fuzz: fuzz_$t: $(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$dir/fuzz_$t.log" | grep -oE '[0-9]+$') runs, no crash"
  fi
done
exit $status
