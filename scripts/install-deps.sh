#!/usr/bin/env bash
# Installs the Debian packages clustersim needs. Idempotent; prints nothing when all is there.
# CUDA 13, NCCL and cuBLAS are expected on the machine already (nvcc on the PATH); without them
# the calibration runners are simply not built.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libyaml-cpp-dev libcli11-dev libboost-graph-dev catch2 libfmt-dev nlohmann-json3-dev
  libbenchmark-dev
  libjemalloc-dev                         # the sweeping programs' allocator (app/allocator.cpp)
  zlib1g-dev                              # gzip-compressed profiler traces (calibrate import)
  clang libclang-rt-14-dev clang-format   # libFuzzer target and the format check
  libopenmpi-dev openmpi-bin              # distributed sweeps (clustersim sweep --mpi)
  python3                                 # scripts/check-layering.py
  python3-dev pybind11-dev                # the clustersim Python module (python/)
  python3-pytest python3-pandas           # its tests (tests/python), DataFrames included
  graphviz                                # docs/dependencies.svg (scripts/gen-dependency-graph.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
