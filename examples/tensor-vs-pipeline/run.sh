# Tensor or pipeline parallel: every split of Llama 3 70B's 64 H100s into tensor x pipeline x
# data parallel, with one and two micro-batches per pass, the five fastest that fit printed.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
# The commands as the README writes them, run from the repository's root: `clustersim` is the
# binary under test, configs/ the repository's (linked here when this runs elsewhere).
clustersim() { "$CLUSTERSIM" "$@"; }
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
clustersim sweep configs/experiments/llama3-70B-64xH100-p5.yaml --vary parallel.tp=1,2,4,8 \
  --vary parallel.pp=1,2,4,8 --vary training.micro_batch=1,2 --top 5 --jobs 2
