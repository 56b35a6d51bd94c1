#!/usr/bin/env bash
# Writes docs/experiments.md and docs/hardware-files.md, the reference of every key of the
# experiment and hardware files, from the key tables the loaders read by
# (`clustersim init --docs experiments|hardware`; config/key_table.h), and the field tables of
# docs/measurements.md, between its `<!-- begin/end: clustersim init --docs measurements -->`
# lines, from the tables the measurement reader and writer loop over
# (`clustersim init --docs measurements`; calibrate/measurement_fields.h).
#   scripts/gen-config-docs.sh [BUILD_DIR]           regenerate them (default build/test)
#   scripts/gen-config-docs.sh --check [BUILD_DIR]   fail, with a diff, when one is not what
#                                                    the tables say now (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
dir=${1:-build/test}
status=0
# The page `doc` with the lines between its begin and end markers replaced by the file `part`.
splice() {
  local doc=$1 part=$2 begin="<!-- begin: clustersim init --docs measurements -->"
  local end="<!-- end: clustersim init --docs measurements -->"
  if ! grep -qxF -- "$begin" "$doc" || ! grep -qxF -- "$end" "$doc"; then
    echo "gen-config-docs: $doc lacks the lines $begin and $end" >&2
    return 1
  fi
  awk -v part="$part" -v begin="$begin" -v end="$end" '
    $0 == begin { print; while ((getline line < part) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip' "$doc"
}

for pair in experiments:docs/experiments.md hardware:docs/hardware-files.md \
    measurements:docs/measurements.md; do
  kind=${pair%%:*}
  doc=${pair#*:}
  tmp=$(mktemp)
  "$dir/app/clustersim" init --docs "$kind" --out "$tmp" --force
  if [ "$kind" = measurements ]; then
    page=$(mktemp)
    splice "$doc" "$tmp" >"$page"
    mv "$page" "$tmp"
  fi
  if [ "$check" = 1 ]; then
    if ! diff -u "$doc" "$tmp" >/dev/null 2>&1; then
      echo "gen-config-docs: $doc is out of date; run scripts/gen-config-docs.sh" >&2
      diff -u "$doc" "$tmp" 2>&1 | head -40 >&2 || true
      status=1
    fi
    rm -f "$tmp"
  else
    mv "$tmp" "$doc"
    chmod 644 "$doc"
    echo "wrote $doc"
  fi
done
[ "$check" = 1 ] && [ "$status" = 0 ] &&
  echo "docs/experiments.md, docs/hardware-files.md and docs/measurements.md are up to date"
exit $status
