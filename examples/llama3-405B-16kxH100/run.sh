# Llama 3 405B on 16,384 H100s in Meta's 4D layout: the 8K-token pre-training step (tp 8, cp 1,
# pp 16, dp 128), then the long-context stage's layout (131,072-token sequences, cp 16, dp 8).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/llama3-405B-16384xH100.yaml"
$CLUSTERSIM run "$exp"
echo
$CLUSTERSIM run "$exp" --set model.seq=131072 --set parallel.cp=16 \
  --set parallel.dp=8 --set training.global_batch=128
