#!/usr/bin/env bash
# Calibrate clustersim on this machine's NVIDIA GPUs:
#   1. build clustersim (Release, CUDA runners on),
#   2. `clustersim calibrate run --quick`: NCCL collectives (with 2+ GPUs), GEMMs, copies,
#      launch overhead,
#   3. one PyTorch training step of the lecture MLP (scripts/pytorch/lecture_mlp_step.py),
#   4. both merged into one measurement file,
#   5. `clustersim validate` against it, once that subcommand exists,
#   6. PyTorch profiler traces of GPT-style training steps (scripts/gpu-trace-steps.sh),
#      imported into traces.json and split by shape into traces-fit.json / traces-holdout.json.
#
# Usage: scripts/calibrate-on-gpu.sh [OUT_DIR]
#   OUT_DIR defaults to data/measurements/<gpu name>, e.g. data/measurements/nvidia-h100-80gb-hbm3.
# Environment: BUILD_DIR (default build/gpu), JOBS (default: all cores), HARDWARE (the preset
# to validate against; default from the GPU's name), CUDA_HOME (default /usr/local/cuda),
# CLUSTERSIM (a clustersim already built with CUDA on: no build, for a GPU machine that lacks
# the build's Debian packages), FULL=1 (after --quick, also the full sweep of GEMMs, copies
# and launches, into full.json), MLP_SHAPES (the lecture MLP steps to time, as
# "layers:dim:batch" words; default "4:1024:128 4:4096:1024 8:8192:1024"), TRACE_GRID (the
# GPT configurations to trace: "default", "small", or CONFIG words of gpt_trace_steps.py;
# "none" skips the traces), BUDGET_S (seconds of tracing, default 420).
# Exit codes: 0 done (validation above its limit is reported, not fatal); 3 no GPU; other
# non-zero: a step failed. A `calibrate run --quick` that fails is retried one part at a time,
# so that one broken part does not lose the others' measurements.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build/gpu}"
jobs="${JOBS:-$(nproc)}"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$cuda_home/bin:$PATH"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "calibrate-on-gpu: no NVIDIA GPU visible (nvidia-smi): nothing to measure" >&2
    exit 3
fi
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n 1)"
gpu_count="$(nvidia-smi -L | wc -l)"
slug="$(printf '%s' "$gpu_name" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9' '-' |
    sed -e 's/-\{2,\}/-/g' -e 's/^-//' -e 's/-$//')"
out_dir="${1:-$root/data/measurements/$slug}"
mkdir -p "$out_dir"
echo "== $gpu_count x $gpu_name -> $out_dir"

if [[ -n "${CLUSTERSIM:-}" ]]; then
    cs="$CLUSTERSIM"
    echo "== using $cs (no build)"
else
    echo "== build (Release, CUDA on) in $build"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLUSTERSIM_WITH_CUDA=ON \
        -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" -DCLUSTERSIM_BUILD_TESTS=OFF \
        -DCLUSTERSIM_BUILD_BENCH=OFF >/dev/null
    cmake --build "$build" -j "$jobs" --target clustersim
    cs="$build/app/clustersim"
fi

inputs=()
echo "== clustersim calibrate run --quick"
start=$(date +%s)
if "$cs" calibrate run --quick --out "$out_dir/quick.json" 2>&1 | tee "$out_dir/run.log"; then
    echo "calibrate run --quick: $(($(date +%s) - start)) s" | tee -a "$out_dir/run.log"
    inputs+=("$out_dir/quick.json")
else
    echo "calibrate run --quick failed; again one part at a time" | tee -a "$out_dir/run.log"
    for part in launch copy gemm collectives p2p; do
        if "$cs" calibrate run --quick --only "$part" --out "$out_dir/quick-$part.json" 2>&1 |
            tee -a "$out_dir/run.log"; then
            inputs+=("$out_dir/quick-$part.json")
        fi
    done
fi

if [[ "${FULL:-0}" == 1 ]]; then
    echo "== clustersim calibrate run (full sweep: launch, copy, gemm)"
    start=$(date +%s)
    if "$cs" calibrate run --only launch --only copy --only gemm --out "$out_dir/full.json" 2>&1 |
        tee -a "$out_dir/run.log"; then
        echo "calibrate run (full): $(($(date +%s) - start)) s" | tee -a "$out_dir/run.log"
    fi
fi

echo "== PyTorch: training steps of the lecture MLP"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    for shape in ${MLP_SHAPES:-4:1024:128 4:4096:1024 8:8192:1024}; do
        IFS=: read -r layers dim batch <<<"$shape"
        step_file="$out_dir/lecture-mlp-$layers-$dim-$batch.json"
        if python3 "$root/scripts/pytorch/lecture_mlp_step.py" --layers "$layers" \
            --dim "$dim" --batch "$batch" --out "$step_file"; then
            inputs+=("$step_file")
        fi
    done
else
    echo "PyTorch with CUDA is not installed: the training step is not measured" >&2
fi
if [[ ${#inputs[@]} -eq 0 ]]; then
    echo "calibrate-on-gpu: nothing was measured" >&2
    exit 1
fi

if [[ "${TRACE_GRID:-default}" != none ]] &&
    python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "== PyTorch: profiler traces of GPT training steps"
    # shellcheck disable=SC2086
    "$root/scripts/gpu-trace-steps.sh" "$out_dir" "$cs" ${TRACE_GRID:-default} ||
        echo "gpu-trace-steps failed; the other measurements are kept" >&2
fi

echo "== merge"
"$cs" calibrate import "${inputs[@]}" --out "$out_dir/measurements.json"

# The preset to validate against: HARDWARE, or the GPU's name.
hardware="${HARDWARE:-}"
if [[ -z "$hardware" ]]; then
    case "$gpu_name" in
    *A100*) hardware=dgx-a100 ;;
    *H100*) hardware=dgx-h100 ;;
    *H200*) hardware=hgx-h200 ;;
    esac
fi

if ! "$cs" validate --help >/dev/null 2>&1; then
    echo "== validate: this clustersim has no 'validate' subcommand yet; measurements are in" \
        "$out_dir/measurements.json"
    exit 0
fi
if [[ -z "$hardware" ]]; then
    echo "== validate: no preset for '$gpu_name'; set HARDWARE=PRESET_OR_FILE to validate" >&2
    exit 0
fi
echo "== clustersim validate --hardware $hardware"
rc=0
"$cs" validate --hardware "$hardware" --measurements "$out_dir/measurements.json" |
    tee "$out_dir/validation.txt" || rc=$?
if [[ $rc -ne 0 ]]; then
    echo "validate exited $rc (1: an error above its limit; see $out_dir/validation.txt)" >&2
fi
if [[ -f "$out_dir/full.json" ]]; then
    echo "== clustersim validate --hardware $hardware (full sweep)"
    "$cs" validate --hardware "$hardware" --measurements "$out_dir/full.json" |
        tee "$out_dir/validation-full.txt" || true
fi
echo "== done: $out_dir"
