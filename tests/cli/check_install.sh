#!/usr/bin/env bash
# `cmake --install` puts the binary and the presets under a prefix, and the installed binary
# finds its presets there, from any directory, without CLUSTERSIM_CONFIG_DIR.
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/clustersim" || { echo "FAIL: no $prefix/bin/clustersim"; exit 1; }
test -f "$prefix/share/clustersim/configs/hardware/dgx-a100.yaml" ||
  { echo "FAIL: presets not installed"; exit 1; }
cd "$prefix"
out=$(env -u CLUSTERSIM_CONFIG_DIR "$prefix/bin/clustersim" list)
case "$out" in
  *"Hardware ($prefix/share/clustersim/configs/hardware"*) ;;
  *) echo "FAIL: the installed binary does not read its installed presets:"; echo "$out"; exit 1 ;;
esac
env -u CLUSTERSIM_CONFIG_DIR "$prefix/bin/clustersim" hardware show dgx-a100 >/dev/null
echo "ok: installed under $prefix and found its presets"
