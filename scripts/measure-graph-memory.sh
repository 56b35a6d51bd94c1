#!/usr/bin/env bash
# Measures the heap a cluster's graph costs, for the size refusal of hardware/topology.cpp
# (kBytesPerVertex, kBytesPerEdge): `clustersim hardware show` (the graph built, then its
# bisection as a maximum flow: the most memory any command spends on the graph alone) under
# valgrind's massif at several sizes of two presets of different edges per vertex, and a least
# squares fit of the peak heap to  base + bytes_per_vertex x vertices + bytes_per_edge x edges
# (edges: directed, two per physical link).
#
#   scripts/measure-graph-memory.sh [BUILD_DIR]      (default build/test; takes a few minutes)
set -euo pipefail
build=${1:-build/test}
bin="$build/app/clustersim"
[[ -x "$bin" ]] || { echo "no $bin: build it first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows"
for case in dgx-a100:2048 dgx-a100:8192 dgx-a100:32768 dgx-a100:65536 \
            aws-p4d:2048 aws-p4d:8192 aws-p4d:32768 aws-p4d:65536; do
    preset=${case%%:*}
    gpus=${case##*:}
    valgrind --tool=massif --massif-out-file="$tmp/massif" --depth=1 \
        "$bin" hardware show "$preset" --gpus "$gpus" >"$tmp/show" 2>/dev/null
    vertices=$(awk '$1 == "vertices" { print $2 }' "$tmp/show")
    # Links by kind: the table between "links" and the next blank line; count is column 2.
    links=$(awk '$1 == "links" { f = 1; next } f && NF == 0 { f = 0 } f { s += $2 } END { print s }' "$tmp/show")
    peak=$(awk -F= '$1 == "mem_heap_B" { h = $2 } $1 == "heap_tree" && $2 == "peak" { print h }' "$tmp/massif")
    echo "$preset $gpus $vertices $((2 * links)) $peak" | tee -a "$rows"
done
python3 - "$rows" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
X = [[1.0, float(r[2]), float(r[3])] for r in rows]
y = [float(r[4]) for r in rows]
# Normal equations of the 3-parameter least squares fit.
A = [[sum(x[i] * x[j] for x in X) for j in range(3)] for i in range(3)]
b = [sum(x[i] * v for x, v in zip(X, y)) for i in range(3)]
for c in range(3):
    p = max(range(c, 3), key=lambda r: abs(A[r][c]))
    A[c], A[p], b[c], b[p] = A[p], A[c], b[p], b[c]
    for r in range(3):
        if r != c:
            f = A[r][c] / A[c][c]
            A[r] = [a - f * ac for a, ac in zip(A[r], A[c])]
            b[r] -= f * b[c]
base, per_v, per_e = (b[i] / A[i][i] for i in range(3))
print(f"fit: peak heap = {base / 1e6:.1f} MB + {per_v:.0f} B x vertices + {per_e:.0f} B x edges")
worst = max(abs(base + per_v * x[1] + per_e * x[2] - v) / v for x, v in zip(X, y))
print(f"worst relative error of the fit: {100 * worst:.1f}%")
PY
