# GPT-3 175B on 64 A100s: the human report, then the machine-readable one.
set -e
exp="$EXAMPLE_DIR/../../configs/experiments/gpt3-175B-64xA100.yaml"
$CLUSTERSIM run "$exp" --trace gpt3.trace.json --timeline gpt3.timeline.svg
echo
$CLUSTERSIM run "$exp" --format json
