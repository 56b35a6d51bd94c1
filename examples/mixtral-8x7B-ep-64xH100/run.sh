# Mixtral 8x7B with expert parallelism on 64 H100s: the report, then the same layout with the
# experts over two nodes (ep 16 does not divide 8 experts: the error says which ep would), and
# with the all-to-alls inside a node but each expert split over two GPUs (etp 2).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/mixtral-8x7B-64xH100.yaml"
$CLUSTERSIM run "$exp" --trace mixtral.trace.json
echo
$CLUSTERSIM run "$exp" --set parallel.ep=1 | sed -n '/^parallel/p;/^step time/p;/^  compute /p;/^  stage 0 /p'
echo
$CLUSTERSIM run "$exp" --set parallel.ep=16 || echo "exit $?"
