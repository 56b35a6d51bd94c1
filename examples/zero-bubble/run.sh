# The schedules that fill the bubble: 1F1B, interleaved 1F1B, zero-bubble ZB-H1 and ZB-V (backward
# split into input- and weight-gradient passes, Qi et al. 2023) and DeepSeek's bidirectional
# DualPipe, on the 22B GPT of examples/pipeline-schedules (32 A100s, pp 4), against the number of
# micro-batches (bubble.svg), then one step of ZB-H1 and one of DualPipe on their timelines.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/zero-bubble under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/zero-bubble}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
# The experiment by a relative path, so that what is printed does not depend on where the
# repository is.
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
exp=configs/experiments/pipeline-schedules.yaml
$CLUSTERSIM bubble $exp --micro-batches 4,8,...,32 \
  --schedules 1f1b,interleaved,zb-h1,zb-v,dualpipe --plot bubble.svg --jobs 2
echo
$CLUSTERSIM run $exp --set parallel.schedule=zb-h1 --timeline zb-h1.svg
echo
$CLUSTERSIM run $exp --set parallel.schedule=dualpipe --timeline dualpipe.svg
