#!/usr/bin/env bash
# Trace GPT-style training steps in plain PyTorch on this machine's first GPU and import them:
#   1. scripts/pytorch/gpt_trace_steps.py records torch.profiler traces (CPU + CUDA,
#      record_shapes=True) of the configurations of its grid, gzip-compressed, within a time
#      budget, and a manifest line per trace (the model settings, the step time);
#   2. `clustersim calibrate import TRACE --set ...` turns each into a measurement file
#      (kernels by class, the GEMMs, launch overhead, the whole step);
#   3. all of them merged into traces.json, and `calibrate split --by-shape` into fit.json
#      and holdout.json (shapes left out, not random points).
# Run by scripts/calibrate-on-gpu.sh when PyTorch with CUDA is present; alone:
#   scripts/gpu-trace-steps.sh OUT_DIR CLUSTERSIM [GRID...]
# Environment: BUDGET_S (default 420: seconds of tracing), LAYERS (default 2).
# Exit codes: 0 done; 3 no GPU or no PyTorch with CUDA; other non-zero: a step failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_dir="${1:?usage: gpu-trace-steps.sh OUT_DIR CLUSTERSIM [GRID...]}"
cs="${2:?usage: gpu-trace-steps.sh OUT_DIR CLUSTERSIM [GRID...]}"
shift 2
grid=("$@")
[[ ${#grid[@]} -eq 0 ]] && grid=(default)
trace_dir="$out_dir/traces"
mkdir -p "$trace_dir"
rm -f "$trace_dir/manifest.jsonl"

python3 "$root/scripts/pytorch/gpt_trace_steps.py" --out "$trace_dir" \
    --budget-s "${BUDGET_S:-420}" --layers "${LAYERS:-2}" --grid "${grid[@]}"

imported=()
while IFS= read -r line; do
    trace="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["trace"])' "$line")"
    mapfile -t sets < <(python3 -c 'import json,sys
for s in json.loads(sys.argv[1])["set"]: print("--set"); print(s)' "$line")
    one="$trace_dir/${trace%.json.gz}.measurements.json"
    if "$cs" calibrate import "$trace_dir/$trace" "${sets[@]}" --out "$one"; then
        imported+=("$one")
    fi
done <"$trace_dir/manifest.jsonl"
if [[ ${#imported[@]} -eq 0 ]]; then
    echo "gpu-trace-steps: no trace could be imported" >&2
    exit 1
fi
"$cs" calibrate import "${imported[@]}" --out "$out_dir/traces.json"
"$cs" calibrate split "$out_dir/traces.json" --by-shape --fraction 0.6 --seed 1 \
    --out "$out_dir/traces-fit.json" --rest "$out_dir/traces-holdout.json" || true
echo "== traces: $out_dir/traces.json (${#imported[@]} traced configurations)"
