# The lecture's comparison: the lecture's MLP and a GPT-3 2.7B, one MaxText mesh (fsdp 2 x
# tensor 4 over 8 devices), on a TPU v5e 2x4 slice and on 8 H100s.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
# The commands as the README writes them, run from the repository's root: `clustersim` is the
# binary under test, configs/ the repository's (linked here when this runs elsewhere).
clustersim() { "$CLUSTERSIM" "$@"; }
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
clustersim run configs/experiments/lecture-mesh-mlp-v5e.yaml
clustersim run configs/experiments/lecture-mesh-mlp-v5e.yaml --set hardware=dgx-h100
clustersim run configs/experiments/lecture-mesh-gpt-v5e.yaml
clustersim run configs/experiments/lecture-mesh-gpt-v5e.yaml --set hardware=dgx-h100
