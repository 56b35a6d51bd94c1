# A collective over a size sweep, printed as nccl-tests prints it: all_reduce on one DGX H100
# from 1 KiB to 8 GiB, every eighth size (docs/collectives.md shows it).
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
# The commands as the README writes them, run from the repository's root: `clustersim` is the
# binary under test, configs/ the repository's (linked here when this runs elsewhere).
clustersim() { "$CLUSTERSIM" "$@"; }
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
clustersim collective --hardware dgx-h100 --op all_reduce --min-bytes 1KiB --max-bytes 8GiB -f 8
