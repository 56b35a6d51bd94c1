#!/usr/bin/env bash
# Writes docs/experiments.md and docs/hardware-files.md, the reference of every key of the
# experiment and hardware files, from the key tables the loaders read by
# (`clustersim init --docs experiments|hardware`; config/key_table.h).
#   scripts/gen-config-docs.sh [BUILD_DIR]           regenerate them (default build/test)
#   scripts/gen-config-docs.sh --check [BUILD_DIR]   fail, with a diff, when either is not what
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
for pair in experiments:docs/experiments.md hardware:docs/hardware-files.md; do
  kind=${pair%%:*}
  doc=${pair#*:}
  tmp=$(mktemp)
  "$dir/app/clustersim" init --docs "$kind" --out "$tmp" --force
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
[ "$check" = 1 ] && [ "$status" = 0 ] && echo "docs/experiments.md and docs/hardware-files.md are up to date"
exit $status
