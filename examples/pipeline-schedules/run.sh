# GPipe vs 1F1B vs interleaved 1F1B on the same model and cluster: same bubble for the first two,
# a smaller one for the third, and 1F1B's lower activation memory.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/pipeline-schedules under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/pipeline-schedules}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/pipeline-schedules.yaml"
$CLUSTERSIM run "$exp" --set parallel.schedule=gpipe --timeline gpipe.svg
echo
$CLUSTERSIM run "$exp" --set parallel.schedule=1f1b --timeline 1f1b.svg
echo
$CLUSTERSIM run "$exp" --set parallel.schedule=interleaved-1f1b --set parallel.virtual_stages=2 \
  --timeline interleaved.svg
