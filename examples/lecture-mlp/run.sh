# The lecture's three parallel MLP demos (data, tensor, pipeline parallel on 4 / 4 / 2 H100s).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/lecture-mlp under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/lecture-mlp}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
for kind in data tensor pipeline; do
  $CLUSTERSIM run "$EXAMPLE_DIR/../../configs/experiments/lecture-mlp-$kind.yaml"
  echo
done
