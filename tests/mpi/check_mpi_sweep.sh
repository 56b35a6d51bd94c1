#!/usr/bin/env bash
# The MPI sweep writes what a single process writes: runs `clustersim sweep ... --mpi` under
# `mpirun -n 2` and the same sweep in one process, and compares the two CSVs byte for byte
# after sorting (rank 0 writes rows in configuration order, so they are equal unsorted too).
#   check_mpi_sweep.sh CLUSTERSIM_BINARY SOURCE_DIR MPIEXEC
set -euo pipefail
clustersim=$1
source_dir=$2
mpiexec=${3:-mpirun}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exp="$source_dir/configs/experiments/gpt3-175B-64xA100.yaml"
args=(sweep "$exp" --vary parallel.tp=1,2,4,8 --vary parallel.pp=1,2,4,8,16
      --vary training.micro_batch=1,2 --jobs 1 --top 3)
# Open MPI refuses to run as root unless told to; CI containers often are root.
root_flag=()
if [ "$(id -u)" = 0 ]; then root_flag=(--allow-run-as-root); fi
export OMPI_MCA_rmaps_base_oversubscribe=1
"$mpiexec" "${root_flag[@]}" --oversubscribe -n 2 "$clustersim" "${args[@]}" --mpi \
  --out "$work/mpi.csv" >"$work/mpi.txt" 2>&1 || { cat "$work/mpi.txt"; exit 1; }
"$clustersim" "${args[@]}" --out "$work/one.csv" >"$work/one.txt" 2>&1 ||
  { cat "$work/one.txt"; exit 1; }
rows=$(grep -vc '^#' "$work/one.csv")
if [ "$rows" -ne 41 ]; then
  echo "mpi sweep: expected 40 rows and the column line in the single-process CSV, got $rows" >&2
  exit 1
fi
if ! grep -q "on each of 2 MPI ranks" "$work/mpi.txt"; then
  echo "mpi sweep: the run did not use 2 ranks:" >&2
  cat "$work/mpi.txt" >&2
  exit 1
fi
if ! diff <(LC_ALL=C sort "$work/one.csv") <(LC_ALL=C sort "$work/mpi.csv"); then
  echo "mpi sweep: the CSV of 2 ranks differs from the single-process CSV (sorted)" >&2
  exit 1
fi
if ! cmp -s "$work/one.csv" "$work/mpi.csv"; then
  echo "mpi sweep: same rows but not in configuration order" >&2
  exit 1
fi
echo "mpi sweep: 2 ranks wrote the single-process CSV ($rows lines)"
