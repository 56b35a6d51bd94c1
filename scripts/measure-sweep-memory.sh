#!/usr/bin/env bash
# Where a sweep's memory goes, per thread and shared (issue 16: memory that does not grow per
# thread beyond the caches the threads share). Peak resident set (/usr/bin/time -v) of
#   1. the 11,520-configuration Turing-530B sweep of bench/bench_sweep.cpp, --jobs 1 and 2;
#   2. the same sweep without its long pipelines (pp <= 15, micro-batches >= 4): what the
#      threads share and what explore/ keeps per thread, with little step scratch;
#   3. `run` of the sweep's heaviest configuration alone (tp 8, pp 105, dp 3, 3,360
#      micro-batches of 1: 705,600 passes) and of a light one, and the heaviest one's heap by
#      allocation site (massif): the scratch one step holds while it is simulated;
# and that the CSVs of --jobs 1 and 2 are the same bytes.
#
#   scripts/measure-sweep-memory.sh [BUILD_DIR]      (default build/test; a minute or two idle)
set -euo pipefail
build=${1:-build/test}
bin="$build/app/clustersim"
[[ -x "$bin" ]] || { echo "no $bin: build it first" >&2; exit 2; }
exp=configs/experiments/turing-530B-2520xA100.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
peak() { awk -F': ' '/Maximum resident/ { printf "%.0f MB", $2 / 1024 }' "$1"; }

sweep() { # NAME JOBS AXES...
    local name=$1 jobs=$2
    shift 2
    /usr/bin/time -v "$bin" sweep "$exp" --set parallel.virtual_stages=1 "$@" --jobs "$jobs" \
        --out "$tmp/$name-$jobs.csv" --top 5 >/dev/null 2>"$tmp/time"
    echo "$name sweep, --jobs $jobs: peak RSS $(peak "$tmp/time")"
}
full=(--vary parallel.tp=1,2,4,8 --vary parallel.pp=1,3,5,7,15,21,35,105
      --vary training.micro_batch=1,2,4,8,16 --vary parallel.recompute=none,selective,full
      --vary parallel.schedule=gpipe,1f1b --vary parallel.zero=0,1
      --vary training.global_batch=2520,5040,10080 --vary parallel.sequence_parallel=true,false)
light=(--vary parallel.tp=1,2,4,8 --vary parallel.pp=1,3,5,7,15
       --vary training.micro_batch=4,8,16 --vary parallel.recompute=none,selective,full
       --vary parallel.schedule=gpipe,1f1b --vary parallel.zero=0,1
       --vary training.global_batch=2520,5040 --vary parallel.sequence_parallel=true,false)
for jobs in 1 2; do sweep turing "$jobs" "${full[@]}"; done
cmp -s "$tmp/turing-1.csv" "$tmp/turing-2.csv" && echo "CSV of --jobs 1 and 2: identical" ||
    echo "CSV of --jobs 1 and 2: DIFFER"
for jobs in 1 2; do sweep light "$jobs" "${light[@]}"; done

one=(run "$exp" --set parallel.virtual_stages=1 --set parallel.tp=8 --set parallel.schedule=1f1b
     --set training.global_batch=10080)
/usr/bin/time -v "$bin" "${one[@]}" --set parallel.pp=105 --set parallel.dp=3 \
    --set training.micro_batch=1 >/dev/null 2>"$tmp/time"
echo "heaviest configuration alone (pp 105, 3,360 micro-batches): peak RSS $(peak "$tmp/time")"
/usr/bin/time -v "$bin" "${one[@]}" --set parallel.pp=105 --set parallel.dp=3 \
    --set training.micro_batch=16 >/dev/null 2>"$tmp/time"
echo "light configuration alone (pp 105, 210 micro-batches): peak RSS $(peak "$tmp/time")"
if command -v valgrind >/dev/null; then
    valgrind --tool=massif --massif-out-file="$tmp/massif" --depth=12 "$bin" "${one[@]}" \
        --set parallel.pp=105 --set parallel.dp=3 --set training.micro_batch=1 >/dev/null 2>&1
    echo "heaviest configuration's peak heap (massif), largest sites of the step model:"
    awk -F= '$1 == "mem_heap_B" { h = $2 } /heap_tree=peak/ { printf "  all   %6.1f MB\n", h / 1e6 }' "$tmp/massif"
    # The peak snapshot's tree: "nK: BYTES 0xADDR: FUNCTION(...) (FILE:LINE)"; the deepest frame
    # of each size in the step model's files.
    awk '/heap_tree=peak/ { p = 1; next } /^snapshot=/ { p = 0 } p' "$tmp/massif" |
        grep -E '(analytic_executor|schedule_timing|pipeline_schedule|step_plan)\.cpp:[0-9]+\)$' |
        sed -E 's/^ *n[0-9]+: ([0-9]+) .*\(([a-z_]+\.cpp:[0-9]+)\)$/\1 \2/' |
        sort -k1,1nr -u | head -5 | awk '{ printf "  %-5s %6.1f MB  %s\n", "", $1 / 1e6, $2 }'
fi
