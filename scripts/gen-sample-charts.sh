#!/usr/bin/env bash
# Regenerates the sample charts in docs/images (made-up data; see tests/app/plot_samples.h)
# and, when Chromium is installed, screenshots each into a PNG directory to look at:
#   scripts/gen-sample-charts.sh [BUILD_DIR] [PNG_DIR]    (defaults: build/test, /tmp/charts)
# Real runs of `run --timeline`, `scale --plot` and `bubble --plot` will replace the samples.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
png_dir=${2:-/tmp/charts}
tests="$build/tests/clustersim_tests"
[ -x "$tests" ] || { echo "$0: $tests not built" >&2; exit 2; }
CLUSTERSIM_SAMPLE_DIR="$PWD/docs/images" "$tests" "[samples]" >/dev/null
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
  mkdir -p "$png_dir"
  for svg in docs/images/sample-*.svg; do
    scripts/screenshot-svg.sh "$svg" "$png_dir/$(basename "${svg%.svg}").png"
  done
else
  echo "$0: chromium not installed; SVGs written, no screenshots" >&2
fi
