# The built-in demo: the lecture's three parallel MLPs side by side, then one step of GPT-3 175B
# on 64 A100s; it writes its traces and charts into ./clustersim-demo/. The README's excerpt.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
# The commands as the README writes them, run from the repository's root: `clustersim` is the
# binary under test, configs/ the repository's (linked here when this runs elsewhere).
clustersim() { "$CLUSTERSIM" "$@"; }
[ -e configs ] || ln -s "$EXAMPLE_DIR/../../configs" configs
clustersim demo
