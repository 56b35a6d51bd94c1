# Llama 3 405B on 16,384 H100s in Meta's 4D layout: the 8K-token pre-training step (tp 8, cp 1,
# pp 16, dp 128), then the long-context stage's layout (131,072-token sequences, cp 16, dp 8).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/llama3-405B-16kxH100 under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/llama3-405B-16kxH100}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/llama3-405B-16384xH100.yaml"
$CLUSTERSIM run "$exp"
echo
$CLUSTERSIM run "$exp" --set model.seq=131072 --set parallel.cp=16 \
  --set parallel.dp=8 --set training.global_batch=128
