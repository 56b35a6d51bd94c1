# GPT-3 175B on 64 A100s: the human report, then the machine-readable one.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/gpt3-175B-64xA100 under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/gpt3-175B-64xA100}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/gpt3-175B-64xA100.yaml"
$CLUSTERSIM run "$exp" --trace gpt3.trace.json --timeline gpt3.timeline.svg
echo
$CLUSTERSIM run "$exp" --format json
