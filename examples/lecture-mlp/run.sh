# The lecture's three parallel MLP demos (data, tensor, pipeline parallel on 4 / 4 / 2 H100s).
set -e
for kind in data tensor pipeline; do
  $CLUSTERSIM run "$EXAMPLE_DIR/../../configs/experiments/lecture-mlp-$kind.yaml"
  echo
done
