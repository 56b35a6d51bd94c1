# Exploring GPT-3 175B on A100 clusters: a sweep of the parallel layout (the 5 best printed, all
# of them in sweep.csv), what more GPUs buy and cost (scale.svg), and how many micro-batches
# the pipeline bubble needs (bubble.svg).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
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
