#!/usr/bin/env bash
# Why H100 training steps were predicted too fast: the dense bf16 rows of
# data/reference/large-scale/h100-published-runs.yaml (torchtitan on Grand Teton H100s at
# 500 W), each written as an experiment file mirroring the row (dimensions, layout, batch,
# recompute), run as committed and with one mechanism changed at a time, against the measured
# iteration time. Also the evidence for the H100's sustained clock.
#   scripts/analyse-h100-steps.sh [BUILD_DIR]      (default build/test)
set -euo pipefail
cd "$(dirname "$0")/.."
cs=${1:-build/test}/app/clustersim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== The H100's dense peak and clocks"
echo "peak bf16 989.4 TFLOP/s = 132 SMs x 4096 dense FLOP/clock x 1830 MHz (NVIDIA H100 Tensor"
echo "Core GPU Architecture whitepaper: its peak table is at the 1830 MHz boost of the SXM5; the"
echo "max boost an SXM5 reports is 1980 MHz); TDP 700 W (H100 datasheet)."
awk 'BEGIN { printf "  check: 132 x 4096 x 1.830e9 = %.1f TFLOP/s\n", 132 * 4096 * 1.830e9 / 1e12 }'

echo
echo "== Steady-state 16-bit GEMMs on an H200 (data/measurements/nvidia-h200/full.json) against the"
echo "   model at the boost clock (hgx-h200 with gpu.sustained_clock_mhz 1980)"
"$cs" validate --hardware hgx-h200 --kind gemms -m data/measurements/nvidia-h200/full.json \
  --format csv 2>/dev/null >"$tmp/gemm-sustained.csv" || true
printf 'extends: hgx-h200\ngpu: {sustained_clock_mhz: 1980}\n' >"$tmp/boost.yaml"
"$cs" validate --hardware "$tmp/boost.yaml" --kind gemms -m data/measurements/nvidia-h200/full.json \
  --format csv 2>/dev/null >"$tmp/gemm-boost.csv" || true
python3 - "$tmp/gemm-boost.csv" "$tmp/gemm-sustained.csv" <<'EOF'
import csv, sys
def rows(path):
    with open(path) as f:
        return {r["point"]: r for r in csv.DictReader(l for l in f if not l.startswith("#"))}
boost, sustained = rows(sys.argv[1]), rows(sys.argv[2])
ratios = []
print(f"  {'GEMM':40s} {'measured':>10s} {'boost':>10s} {'1500 MHz':>10s} {'boost/meas':>10s}")
for what, b in boost.items():
    if not any(s in what for s in ("8192x8192x8192 bf16", "16384x16384x16384 bf16",
                                   "8192x8192x8192 fp16", "16384x16384x16384 fp16",
                                   "4096x4096x4096 bf16", "8192x1024x8192 bf16")):
        continue
    m, p, q = float(b["measured_s"]), float(b["predicted_s"]), float(sustained[what]["predicted_s"])
    if "4096x4096" not in what and "1024x" not in what:
        ratios.append(p / m)
    print(f"  {what:40s} {m*1e3:9.3f}ms {p*1e3:9.3f}ms {q*1e3:9.3f}ms {p/m:10.3f}")
r = sum(ratios) / len(ratios)
print(f"  mean boost-model/measured over the four >= 1 ms 16-bit GEMMs: {r:.3f} -> "
      f"sustained clock {1980*r:.0f} MHz (dgx-h100: 1500)")
EOF

# One experiment per dense bf16 row, mirroring the row's fields (torchtitan: FSDP2 by its
# name, async TP by its name; local batch = micro-batch without a pipeline).
row() { # id gpus layers hidden heads kv ffn tp dp micro global recompute tp_overlap
  cat >"$tmp/$1.yaml" <<EOF
name: $1
hardware: grand-teton-h100
gpus: $2
model: {kind: transformer, layers: $3, hidden: $4, heads: $5, kv_heads: $6, ffn: $7, seq: 8192,
        vocab: 128256, attention: flash, activation: swiglu, norm: rmsnorm,
        position_embedding: rope, tied_embeddings: false, bias: false, dropout: 0}
training: {global_batch: ${11}, micro_batch: ${10}, dtype: bf16, optimizer: adamw,
           apply_rope_fusion: false, bias_activation_fusion: false, norm_fusion: false,
           compile: true}
parallel: {tp: $8, pp: 1, dp: $9, recompute: ${12}, fsdp: true, overlap_grad_reduce: true,
           sequence_parallel: $([ "$8" -gt 1 ] && echo true || echo false), enable_async_tensor_parallel: ${13}$(
             [ "${12}" = selective ] && echo ", selective_recompute: op")}
EOF
}
row tt-8b-fsdp 128 32 4096 32 8 14336 1 128 2 256 selective false
row tt-70b-2d 256 80 8192 64 8 28672 8 32 16 512 full false
row tt-70b-2d-asynctp 256 80 8192 64 8 28672 8 32 16 512 full true
declare -A measured=([tt-8b-fsdp]="2.923 (eager) / 2.515 (compiled)" [tt-70b-2d]=27.430
                     [tt-70b-2d-asynctp]=25.113)

step() { "$cs" run "$@" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin); b = d["breakdown"]; t = d["step_time_s"]
print("%8.3f s  MFU %4.1f%%  compute %.2f (overlap slowdown %.3f) recompute %.2f TP %.2f DP %.3f optimizer %.3f" % (
    t, 100 * d["mfu"], b["compute_s"], b.get("overlap_slowdown_s", 0), b["recompute_s"],
    b["tp_comm_exposed_s"], b["dp_comm_exposed_s"], b["optimizer_s"]))'; }

for id in tt-8b-fsdp tt-70b-2d tt-70b-2d-asynctp; do
  e="$tmp/$id.yaml"
  echo
  echo "== $id: measured ${measured[$id]} s"
  printf '  %-58s' "as committed (1500 MHz x cbrt(500/700), FA-2 at 0.35)"; step "$e"
  printf '  %-58s' "eager: torchtitan's elementwise ops one kernel each"
  step "$e" --set training.compile=false
  printf '  %-58s' "boost clock, no cap, FA 0.5 (main before this work)"
  step "$e" --set hardware.gpu.sustained_clock_mhz=1980 --set hardware.gpu.power_cap_w=700 \
    --set hardware.compute.fused_attention.efficiency=0.5
  printf '  %-58s' "700 W, no cap (DGX H100 power)"; step "$e" --set hardware.gpu.power_cap_w=700
  printf '  %-58s' "attention at dgx-h100's 0.5 (cuDNN / FA-3 class)"
  step "$e" --set hardware.compute.fused_attention.efficiency=0.5
  printf '  %-58s' "Megatron's selective (core attention) for torchtitan's op"
  step "$e" --set parallel.selective_recompute=attention
  printf '  %-58s' "full recompute instead of the row's"
  step "$e" --set parallel.recompute=full --set parallel.selective_recompute=attention
  printf '  %-58s' "no ZeRO-3 gathers (zero 1)"; step "$e" --set parallel.fsdp=false --set parallel.zero=1
done

# The NeMo 24.07 / Megatron-Bridge FP8 rows (dgx-superpod-h100), mapped as accuracy_recent.cpp
# maps them: interleaved 1F1B with the printed v, distributed optimizer, TP overlap.
nemo() { # id gpus layers hidden heads kv ffn seq vocab arch tp pp v dp micro global cp
  local arch
  case ${10} in
    llama) arch="activation: swiglu, norm: rmsnorm, position_embedding: rope, tied_embeddings: false, bias: false" ;;
    nemotron) arch="activation: gelu, norm: layernorm, position_embedding: rope, tied_embeddings: false, bias: false" ;;
    gpt) arch="activation: gelu, norm: layernorm, position_embedding: learned, tied_embeddings: true, bias: true" ;;
  esac
  cat >"$tmp/$1.yaml" <<EOF
name: $1
hardware: dgx-superpod-h100
gpus: $2
model: {kind: transformer, layers: $3, hidden: $4, heads: $5, kv_heads: $6, ffn: $7, seq: $8,
        vocab: $9, attention: flash, $arch, dropout: 0}
training: {global_batch: ${16}, micro_batch: ${15}, dtype: fp8, optimizer: adamw}
parallel: {tp: ${11}, pp: ${12}, dp: ${14}, schedule: interleaved-1f1b, virtual_stages: ${13},
           recompute: none, zero: 1, overlap_grad_reduce: true, overlap_param_gather: true,
           sequence_parallel: true, tp_comm_overlap: true$([ "${17}" -gt 1 ] && echo ", cp: ${17}")}
EOF
}
nemo nemo-gpt3-175b-128 128 96 12288 96 96 49152 2048 51200 gpt 4 8 6 4 1 256 1
nemo nemo-gpt3-175b-512 512 96 12288 96 96 49152 2048 51200 gpt 4 8 6 16 2 2048 1
nemo nemo-llama2-70b-64 64 80 8192 64 8 28672 4096 32000 llama 4 4 20 4 1 128 1
nemo nemo-llama3-70b-cp2 64 80 8192 64 8 28672 8192 128256 llama 4 4 5 2 1 128 2
nemo nemo-nemotron-340b 128 96 18432 96 8 73728 4096 256000 nemotron 8 8 12 2 1 32 1
nemo mbridge-llama3-70b 64 80 8192 64 8 28672 8192 128256 llama 4 8 5 2 1 128 1
declare -A nemo_measured=([nemo-gpt3-175b-128]=5.642 [nemo-gpt3-175b-512]=10.476
  [nemo-llama2-70b-64]=4.799 [nemo-llama3-70b-cp2]=10.688 [nemo-nemotron-340b]=3.180
  [mbridge-llama3-70b]=10.227)

stepfull() { "$cs" run "$@" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin); b = d["breakdown"]; t = d["step_time_s"]
print("%7.3f s  compute %.2f host %.2f TP %.2f bubble %.2f PP %.2f DP %.2f" % (
    t, b["compute_s"], b["host_s"], b["tp_comm_exposed_s"], b["pp_bubble_s"],
    b["pp_comm_exposed_s"], b["dp_comm_exposed_s"]))'; }

echo
echo "== NeMo / Megatron-Bridge FP8 rows: the per-micro-batch host time (get_batch and its"
echo "   broadcast, loss; framework.microbatch_overhead) on every chunk of the interleaved"
echo "   schedule (Megatron-LM before a0e190c, 2023-10) or on the first and last chunks only"
echo "   (Megatron-Core's get_batch returns None elsewhere: the presets' batch_on_every_stage)"
for id in nemo-gpt3-175b-128 nemo-gpt3-175b-512 nemo-llama2-70b-64 nemo-llama3-70b-cp2 \
  nemo-nemotron-340b mbridge-llama3-70b; do
  echo "  $id: measured ${nemo_measured[$id]} s"
  printf '    %-30s' "every chunk"
  stepfull "$tmp/$id.yaml" --set hardware.framework.batch_on_every_stage=true
  printf '    %-30s' "first and last chunks"
  stepfull "$tmp/$id.yaml" --set hardware.framework.batch_on_every_stage=false
done

echo
echo "== torchtitan's selective AC is op-level (torchtitan/distributed/activation_checkpoint.py,"
echo "   selective_ac_option 'op' in its llama3 configs: every second aten.mm output is not saved,"
echo "   so its matmul runs again in the backward, with every elementwise op), modelled as"
echo "   parallel.selective_recompute: op. Its matmuls again, per block in the order the block"
echo "   calls mm (wq, wk, wv, wo, w1, w3, w2; the 2nd, 4th and 6th recompute):"
python3 - <<'PY'
for name, h, kv, ffn in (("Llama 3.1 8B", 4096, 1024, 14336),):
    mms = [h * h, h * kv, h * kv, h * h, h * ffn, h * ffn, ffn * h]
    again = sum(mms[1::2])
    print(f"  {name}: {again / sum(mms):.1%} of the block's forward matmul FLOPs again, about "
          f"{again / sum(mms) / 3:.1%} of its forward + backward matmuls")
PY

echo
echo "== What the torchtitan rows leave: the SM clock at which their compute and recompute would"
echo "   close the gap (communication held as predicted), against the preset's 500 W law"
echo "   (1500 MHz x cbrt(500/700) = 1341 MHz; P ~ f^3) and a voltage-floor law (P ~ f: 1071 MHz)"
implied() { # yaml measured
  "$cs" run "$1" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin); b = d["breakdown"]; t = d["step_time_s"]; m = float(sys.argv[1])
c = b["compute_s"] + b["recompute_s"]
print("predicted %6.3f s, measured %6.3f s: compute+recompute %6.3f s -> implied clock %4.0f MHz"
      % (t, m, c, 1341.0 * c / (c + m - t)))' "$2"; }
for id in tt-8b-fsdp tt-70b-2d tt-70b-2d-asynctp; do
  m=${measured[$id]}; m=${m##* / }; m=${m%% *}
  printf '  %-20s' "$id"; implied "$tmp/$id.yaml" "$m"
done
printf '  %-20s' "tt-8b-fsdp fp8"
"$cs" run "$tmp/tt-8b-fsdp.yaml" --set training.dtype=fp8 --set training.fp8_recipe=tensorwise \
  --format json >"$tmp/fp8.json"
python3 -c '
import json
d = json.load(open("'"$tmp"'/fp8.json")); b = d["breakdown"]; t = d["step_time_s"]; m = 1.955
c = b["compute_s"] + b["recompute_s"]
print("predicted %6.3f s, measured %6.3f s: compute+recompute %6.3f s -> implied clock %4.0f MHz"
      % (t, m, c, 1341.0 * c / (c + m - t)))'
echo "  (the rows as compiled; the eager 8B row, 2.923 s, is costed with torchtitan's elementwise"
echo "   ops one kernel each: training.compile false, the 'eager' line above)"
