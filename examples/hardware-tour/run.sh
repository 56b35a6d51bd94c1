# The hardware presets and what one transfer costs inside a node and across nodes.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/hardware-tour under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/hardware-tour}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
$CLUSTERSIM hardware show dgx-a100
echo
$CLUSTERSIM hardware show pcie-4gpu
echo
$CLUSTERSIM transfer --hardware pcie-4gpu --from gpu0 --to gpu3 --bytes 256MiB
echo
$CLUSTERSIM transfer --hardware dgx-h100 --gpus 128 --from gpu0 --to gpu127 --bytes 1GiB
