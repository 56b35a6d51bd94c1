# The lecture's three parallel MLP demos (data, tensor, pipeline parallel on 4 / 4 / 2 H100s).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
for kind in data tensor pipeline; do
  $CLUSTERSIM run "$EXAMPLE_DIR/../../configs/experiments/lecture-mlp-$kind.yaml"
  echo
done
