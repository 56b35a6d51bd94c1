#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for N seconds (default 60), in parallel.
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
cmake --build "$dir" -j "$(nproc)" --target fuzz_units fuzz_hardware_yaml fuzz_kineto
pids=()
for t in units hardware_yaml kineto; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/$t/* "$work/"
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
    "$work" >"$dir/fuzz_$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    status=1
  fi
done
for t in units hardware_yaml kineto; do
  if grep -qE "ERROR: (libFuzzer|AddressSanitizer)|runtime error|deadly signal" "$dir/fuzz_$t.log"; then
    echo "fuzz: fuzz_$t found a crash:" >&2
    tail -40 "$dir/fuzz_$t.log" >&2
    status=1
  else
    echo "fuzz: fuzz_$t: $(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$dir/fuzz_$t.log" | grep -oE '[0-9]+$') runs, no crash"
  fi
done
exit $status
