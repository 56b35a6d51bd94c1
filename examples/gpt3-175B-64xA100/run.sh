# GPT-3 175B on 64 A100s: the human report, then the machine-readable one.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/gpt3-175B-64xA100.yaml"
$CLUSTERSIM run "$exp" --trace gpt3.trace.json --timeline gpt3.timeline.svg
echo
$CLUSTERSIM run "$exp" --format json
