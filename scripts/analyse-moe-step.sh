#!/usr/bin/env bash
# Where the Megatron-Bridge DeepSeek-V3 row of docs/validation.md "Recent large runs" spends its
# step (1024 H100s, tp 2 pp 8 v 4 ep 64, FP8, layout Et|(tt|)*30L): the row written as an
# experiment file as validation/accuracy_recent.cpp maps it, run with one mechanism changed at a
# time, against the measured iteration time (8192 x 4096 tokens / (1297 tokens/s/GPU x 1024)).
#   scripts/analyse-moe-step.sh [BUILD_DIR]      (default build/test)
set -euo pipefail
cd "$(dirname "$0")/.."
cs=${1:-build/test}/app/clustersim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/dsv3.yaml" <<'YAML'
name: mbridge2509-deepseekv3-1024gpu
hardware: dgx-superpod-h100
gpus: 1024
model:
  extends: deepseek-v3
  seq: 4096
training:
  global_batch: 8192
  micro_batch: 1
  dtype: fp8
  optimizer: adamw
parallel:
  tp: 2
  pp: 8
  dp: 64
  ep: 64
  schedule: interleaved-1f1b
  virtual_stages: 4
  sequence_parallel: true
  pipeline_model_parallel_layout: "Et|(tt|)*30L"
  recompute: none
  zero: 1
  overlap_grad_reduce: true
  overlap_param_gather: true
  tp_comm_overlap: true
YAML
measured=25.264
run() {
  local label=$1
  shift
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  "$cs" run "$tmp/dsv3.yaml" "${sets[@]}" >"$tmp/out.txt" 2>&1 || true
  local step
  step=$(sed -n 's/^step time *\([0-9.]*\) s$/\1/p' "$tmp/out.txt")
  awk -v l="$label" -v s="$step" -v m="$measured" \
    'BEGIN { printf "\n== %s: step %s s, error %+.1f%% (measured %s s)\n", l, s, (s / m - 1) * 100, m }'
  sed -n '/^bubble/p;/^  compute /p;/^  host/p;/^  tensor-parallel/p;/^  expert-parallel/p;/^  pipeline /p' "$tmp/out.txt"
}
echo "The DeepSeek-V3 Megatron-Bridge row (docs/validation.md), one mechanism at a time."
echo "Recipe (Megatron-Bridge v0.2.0 scripts/performance/configs/deepseek/): etp 1,"
echo "moe_flex_dispatcher_backend deepep, moe_a2a_overlap true, recompute_modules [mla_up_proj, mlp],"
echo "moe_router_force_load_balancing true; DeepSeek-V3 routing n_group 8, topk_group 4."
run "as mapped before (etp = tp = 2, alltoall dispatcher)" parallel.etp=2
run "etp 1 (the recipe's expert_tensor_parallel_size)" parallel.etp=1
run "etp 1, flex dispatcher on DeepEP (a copy per destination node)" parallel.etp=1 \
  parallel.moe_token_dispatcher=flex
sed -n '/^memory per GPU/,/^oom/p' "$tmp/out.txt"
run "and the recipe's recompute_modules [mla_up_proj, mlp], gradient reduce not overlapped" \
  parallel.etp=1 parallel.moe_token_dispatcher=flex parallel.recompute=selective \
  "parallel.recompute_modules=[mla_up_proj, mlp]" parallel.overlap_grad_reduce=false \
  parallel.overlap_param_gather=false
sed -n '/^  recompute/p;/^memory per GPU/,/^oom/p' "$tmp/out.txt"
echo
echo "== Why the bubble is not the schedule's: each pipeline rank's busy time (sum of its passes,"
echo "   from the trace) in the last run. Rank 0 holds the embedding and the one dense layer of"
echo "   its first chunk: less work, and its idle time (reported as stage 0's bubble) is mostly"
echo "   the other ranks' extra work, not fill and drain."
"$cs" run "$tmp/dsv3.yaml" --set parallel.etp=1 --set parallel.moe_token_dispatcher=flex \
  --trace "$tmp/t.json" >/dev/null 2>&1 || true
python3 - "$tmp/t.json" <<'PY'
import collections, json, re, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
busy = collections.Counter()
end = 0.0
for e in ev:
    if e.get("ph") == "X" and e.get("tid") == 1 and re.match(r"[FB]\d+\.\d+", e["name"]):
        busy[e["pid"]] += e["dur"]
        end = max(end, e["ts"] + e["dur"])
for pid in sorted(busy):
    print(f"  rank {pid - 1}: busy {busy[pid] / 1e6:6.2f} s of {end / 1e6:6.2f} s, idle {1 - busy[pid] / end:6.1%}")
PY
echo
echo "== All-to-all bytes per GPU and dispatch at ep 64 on 8 nodes (2048 tokens, bf16, h 7168)"
awk 'function miss(s, x, k,   p, i) { p = 1; for (i = 0; i < k; i++) p *= (s - x - i) / (s - i); return p }
BEGIN {
  n = 8 * 0.5 * (1 - miss(128, 32, 8))
  printf "  alltoall: 8 copies per token        %6.1f MB (7/8 across nodes)\n", 2048 * 8 * 7168 * 2 / 1e6
  printf "  flex:     %.3f nodes per token     %6.1f MB over the rail (7/8 across nodes)\n", n, 2048 * n * 7168 * 2 / 1e6
}'
