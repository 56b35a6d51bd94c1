# Predict scaling before renting: Llama 3 70B on rented H100s (AWS p5), the best layout the
# search finds at each GPU count, with throughput, scaling efficiency, and the time and cost to
# train 15T tokens (Llama 3's pre-training tokens) at a price per GPU-hour of your own.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
# The commands as the README writes them, run from the repository's root: `clustersim` is the
# binary under test, configs/ the repository's (linked here when this runs elsewhere).
clustersim() { "$CLUSTERSIM" "$@"; }
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
clustersim scale configs/experiments/llama3-70B-64xH100-p5.yaml --gpus 64,128,...,1024 \
  --tokens 15T --price-per-gpu-hour 4
