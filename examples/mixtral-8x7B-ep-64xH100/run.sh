# Mixtral 8x7B with expert parallelism on 64 H100s: the report, then the same layout with the
# experts over two nodes (ep 16 does not divide 8 experts: the error says which ep would), and
# with the all-to-alls inside a node but each expert split over two GPUs (etp 2).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/mixtral-8x7B-ep-64xH100 under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/mixtral-8x7B-ep-64xH100}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/mixtral-8x7B-64xH100.yaml"
$CLUSTERSIM run "$exp" --trace mixtral.trace.json
echo
$CLUSTERSIM run "$exp" --set parallel.ep=1 | sed -n '/^parallel/p;/^step time/p;/^  compute /p;/^  stage 0 /p'
echo
$CLUSTERSIM run "$exp" --set parallel.ep=16 || echo "exit $?"
