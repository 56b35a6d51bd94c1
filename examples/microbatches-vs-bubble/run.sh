# Micro-batches against the pipeline bubble: the Llama 3 70B layout of
# configs/experiments/llama3-70B-64xH100-p5.yaml (pp 4), its bubble and step time for 4 to 64
# micro-batches under GPipe, 1F1B and interleaved 1F1B, beside the closed forms.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
# The commands as the README writes them, run from the repository's root: `clustersim` is the
# binary under test, configs/ the repository's (linked here when this runs elsewhere).
clustersim() { "$CLUSTERSIM" "$@"; }
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
clustersim bubble configs/experiments/llama3-70B-64xH100-p5.yaml --micro-batches 4,8,...,64 \
  --virtual-stages 5
