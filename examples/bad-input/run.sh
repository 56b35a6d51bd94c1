# Bad input is refused with one line that names the file, the line or JSON path and the key, and
# says what was expected (exit 2), never a crash or a half-written file: a measurement file and
# nccl-tests logs with one fault each. docs/measurements.md shows these messages.
# Run from anywhere: EXAMPLE_DIR defaults to this folder, CLUSTERSIM to the build tree's binary.
: "${EXAMPLE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${CLUSTERSIM:=$EXAMPLE_DIR/../../build/app/clustersim}"
set -e
out=$PWD/imported.json
# From the example's folder, so that the messages name the files as the page does (the binary's
# path made absolute first).
case $CLUSTERSIM in */*) CLUSTERSIM=$(cd "$(dirname "$CLUSTERSIM")" && pwd)/$(basename "$CLUSTERSIM") ;; esac
cd "$EXAMPLE_DIR"
codes=()
for f in negative-time.json unknown-key.json copy-kind.json version.json duplicate.json gpus.json; do
  "$CLUSTERSIM" calibrate import "$f" --out "$out" || codes+=($?)
done
for f in cut-row.log busbw.log truncated.log; do
  "$CLUSTERSIM" calibrate import "$f" --op all_reduce --gpus 8 --out "$out" || codes+=($?)
done
"$CLUSTERSIM" calibrate import nccl-all-reduce-2gpu.csv --out "$out" || codes+=($?)
echo "exit codes: ${codes[*]}"
# Nothing was written for any of them.
[ ! -e "$out" ] && echo "no file written"
