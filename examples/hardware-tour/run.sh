# The hardware presets and what one transfer costs inside a node and across nodes.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
$CLUSTERSIM hardware show dgx-a100
echo
$CLUSTERSIM hardware show pcie-4gpu
echo
$CLUSTERSIM transfer --hardware pcie-4gpu --from gpu0 --to gpu3 --bytes 256MiB
echo
$CLUSTERSIM transfer --hardware dgx-h100 --gpus 128 --from gpu0 --to gpu127 --bytes 1GiB
