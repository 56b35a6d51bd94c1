# The lecture's collective benchmark (Stanford CS336 "Parallelism 2", lecture_08.py): 4 of the
# 8 H100 of a DGX node, 100*1024^2 fp32 elements per rank; measured times are in
# data/reference/lecture/cs336-parallelism-2.yaml.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
# What it writes goes into a folder of its own: OUT_DIR, by default out/examples/lecture-collectives under
# the current directory (.gitignore covers out/; the golden test gives it a scratch folder).
: "${OUT_DIR:=$PWD/out/examples/lecture-collectives}"
# Paths given relative to where it is run still work after the cd.
EXAMPLE_DIR=$(cd "$EXAMPLE_DIR" && pwd)
case $CLUSTERSIM in /*) ;; */*) CLUSTERSIM=$PWD/$CLUSTERSIM ;; esac
mkdir -p "$OUT_DIR" && cd "$OUT_DIR"
set -e
# all_reduce of 400 MiB per rank, and reduce_scatter of a 4 x 400 MiB input per rank.
$CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op all_reduce --bytes 400MiB
echo
$CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op reduce_scatter --bytes 1600MiB
echo
# The factor of two: on the same 400 MiB buffer an all_reduce moves 2(n-1)/n of it per GPU,
# a reduce_scatter or an all_gather (n-1)/n. busbw undoes the factors.
for op in reduce_scatter all_gather all_reduce; do
  $CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op $op --bytes 400MiB --algo ring --format csv
done
echo
# The flow network plays the same schedule out link by link: the same time when nothing else runs.
$CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op all_reduce --bytes 400MiB --algo ring --fidelity flow
echo
# The live demo: every rank's buffer before and after (rank r starts with r + index).
$CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op all_reduce --show-values
echo
$CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op reduce_scatter --show-values
echo
$CLUSTERSIM collective --hardware dgx-h100 --gpus 4 --op all_gather --show-values
