#!/usr/bin/env bash
# `cmake --install` puts the Python package under the prefix; imported from there, from another
# directory and without CLUSTERSIM_CONFIG_DIR, it finds the installed presets and its run()
# gives the installed binary's `run --format json`, to the bit.
#   check_install.sh BUILD PYTHON PYTHON_INSTALL_DIR SOURCE
set -euo pipefail
build=$1 python=$2 pydir=$3 source=$4
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/$pydir/clustersim/__init__.py" || { echo "FAIL: no package in $prefix/$pydir"; exit 1; }
cd "$prefix"
experiment=$prefix/share/clustersim/configs/experiments/gpt3-175B-64xA100.yaml
env -u CLUSTERSIM_CONFIG_DIR PYTHONPATH="$prefix/$pydir" "$python" - "$experiment" "$prefix" <<'PY'
import json, subprocess, sys
import clustersim
experiment, prefix = sys.argv[1], sys.argv[2]
assert clustersim.__file__.startswith(prefix), clustersim.__file__
assert clustersim.config_dir() == prefix + "/share/clustersim/configs", clustersim.config_dir()
r = clustersim.run(experiment)
out = subprocess.run([prefix + "/bin/clustersim", "run", experiment, "--format", "json"],
                     capture_output=True, text=True, check=True).stdout
assert r == json.loads(out), "installed run() differs from the installed binary's JSON"
print("step_time_s", r["step_time_s"])
PY
# The issue's one-liner, from the repository root, against the build tree's package.
cd "$source"
PYTHONPATH="$build/python" "$python" -c "import clustersim; print(clustersim.run('configs/experiments/gpt3-175B-64xA100.yaml')['step_time_s'])"
echo "ok: the package installed under $prefix imports, finds its presets and matches the binary"
