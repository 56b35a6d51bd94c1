# The hardware presets and what one transfer costs inside a node and across nodes.
set -e
$CLUSTERSIM hardware show dgx-a100
echo
$CLUSTERSIM hardware show pcie-4gpu
echo
$CLUSTERSIM transfer --hardware pcie-4gpu --from gpu0 --to gpu3 --bytes 256MiB
echo
$CLUSTERSIM transfer --hardware dgx-h100 --gpus 128 --from gpu0 --to gpu127 --bytes 1GiB
