#!/usr/bin/env bash
# Renders an SVG file to PNG with headless Chromium, to look at a chart as a browser shows it.
#   scripts/screenshot-svg.sh FILE.svg OUT.png
# The window is the SVG's own width x height (read from its <svg> element), at least 1100x700
# wide/high only when the SVG gives no size. Chromium comes from Debian (apt-get install
# chromium); it is a developer tool, not a build dependency.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 FILE.svg OUT.png" >&2
  exit 2
fi
svg=$1
out=$2
[ -f "$svg" ] || { echo "$0: no such file: $svg" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "$0: chromium not found (apt-get install chromium)" >&2; exit 2; }

# The first width="..." height="..." of the file are the <svg> element's.
w=$(grep -o -m1 'width="[0-9.]*"' "$svg" | head -1 | tr -dc '0-9.' | cut -d. -f1)
h=$(grep -o -m1 'height="[0-9.]*"' "$svg" | head -1 | tr -dc '0-9.' | cut -d. -f1)
w=${w:-1100}
h=${h:-700}

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
abs_svg=$(cd "$(dirname "$svg")" && pwd)/$(basename "$svg")
abs_out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" --screenshot="$abs_out" \
  --window-size="$w,$h" "file://$abs_svg" >/dev/null 2>&1
[ -s "$abs_out" ] || { echo "$0: chromium wrote no screenshot" >&2; exit 1; }
echo "$out"
