# GPipe vs 1F1B vs interleaved 1F1B on the same model and cluster: same bubble for the first two,
# a smaller one for the third, and 1F1B's lower activation memory.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/pipeline-schedules.yaml"
$CLUSTERSIM run "$exp" --set parallel.schedule=gpipe --timeline gpipe.svg
echo
$CLUSTERSIM run "$exp" --set parallel.schedule=1f1b --timeline 1f1b.svg
echo
$CLUSTERSIM run "$exp" --set parallel.schedule=interleaved-1f1b --set parallel.virtual_stages=2 \
  --timeline interleaved.svg
