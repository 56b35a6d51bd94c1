# Exploring GPT-3 175B on A100 clusters: a sweep of the parallel layout (the 5 best printed, all
# of them in sweep.csv), what more GPUs buy and cost (scale.svg), and how many micro-batches
# the pipeline bubble needs (bubble.svg); then a plan for Mixtral 8x7B (plan.csv).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/explore under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/explore}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
EXAMPLE_DIR=${EXAMPLE_DIR:-$(cd "$(dirname "$0")" && pwd)}
CLUSTERSIM=${CLUSTERSIM:-clustersim}
# The experiments by a relative path, so that what is printed does not depend on where the
# repository is.
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
exp=configs/experiments/gpt3-175B-64xA100.yaml
$CLUSTERSIM sweep $exp --vary parallel.tp=1,2,4,8 --vary parallel.pp=1,2,4,8,16 \
  --vary training.micro_batch=1,2 --vary parallel.recompute=selective,full \
  --out sweep.csv --top 5 --jobs 2
echo
$CLUSTERSIM scale $exp --gpus 64,128,...,1024 --tokens 300B --price-per-gpu-hour 2 \
  --plot scale.svg --jobs 2
echo
$CLUSTERSIM bubble configs/experiments/pipeline-schedules.yaml --micro-batches 1,2,...,64 \
  --virtual-stages 2 --plot bubble.svg --jobs 2
echo
# Planning a run: Mixtral 8x7B, 2T tokens in 60 days on 2,048-4,096 H100s; expert and context
# parallelism and ZeRO searched too, 3,072 GPUs a row saying why, the plan also as CSV.
$CLUSTERSIM scale configs/experiments/mixtral-8x7B-64xH100.yaml --gpus 2048,3072,4096 \
  --tokens 2T --target-days 60 --out plan.csv --jobs 2
