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
# An input error found by every rank: exit 2, and rank 0 says it every time (it printed nothing
# in 2 of 5 runs when another rank's exit stopped the job first). Also the configuration bound.
for bad in "--vary parallel.tp=0,1" "--vary parallel.tp=1,2,4 --max-configurations 2"; do
  for try in 1 2 3 4 5; do
    rc=0
    # shellcheck disable=SC2086
    "$mpiexec" "${root_flag[@]}" --oversubscribe -n 2 "$clustersim" sweep "$exp" $bad --mpi \
      >"$work/bad.txt" 2>&1 || rc=$?
    if [ "$rc" -ne 2 ] || ! grep -q "clustersim: error: " "$work/bad.txt"; then
      echo "mpi sweep: '$bad' (try $try) exited $rc without its message:" >&2
      cat "$work/bad.txt" >&2
      exit 1
    fi
  done
done
echo "mpi sweep: 2 ranks wrote the single-process CSV ($rows lines); input errors said by rank 0"
