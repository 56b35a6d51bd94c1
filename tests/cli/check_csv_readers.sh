#!/usr/bin/env bash
# The CSVs clustersim writes (scale --out, sweep --out, bubble --out) read with a plain
# pandas.read_csv(path), no options: one header line, as many fields in every row, each column
# one type (numbers of a float column always written as floats, booleans true/false). Where no
# Python has pandas, the same checks with the csv module.
#   check_csv_readers.sh CLUSTERSIM_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
exp=$src/configs/experiments
"$bin" scale "$exp/mixtral-8x7B-64xH100.yaml" --gpus 64,96,128 --tokens 100B --jobs 2 \
  --set parallel.cp=1 --set parallel.zero=1 --out plan.csv >/dev/null
"$bin" sweep "$exp/gpt3-175B-64xA100.yaml" --vary parallel.tp=1,2,...,8 --vary parallel.pp=4,8,16 \
  --jobs 2 --out sweep.csv >/dev/null
"$bin" bubble "$exp/pipeline-schedules.yaml" --micro-batches 4,8,16 --fixed-batch --out bubble.csv \
  --jobs 2 >/dev/null
python=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import pandas' 2>/dev/null; then python=$p; break; fi
done
if [ -n "$python" ]; then
  "$python" - <<'PY'
import pandas as pd
for f in ["plan.csv", "sweep.csv", "bubble.csv"]:
    d = pd.read_csv(f)
    assert len(d) > 0, f
    for c in d.columns:
        kinds = {type(v).__name__ for v in d[c].dropna()}
        assert len(kinds) <= 1, (f, c, kinds)
plan = pd.read_csv("plan.csv")
assert plan["gpus"].tolist() == [64, 96, 128], plan["gpus"].tolist()
assert str(plan["meets_target"].dtype) == "bool"
assert str(pd.read_csv("sweep.csv")["ep_comm_exposed_s"].dtype) == "float64"
# The sweep's dtype contract (docs/output.md, and "pandas" in sweep.csv.json): a column with a
# value in every row reads as the type the sidecar states; empty cells (no value, never a
# stand-in number) read as pandas reads missing values; the sidecar's types with pandas'
# nullable dtypes read every column as stated.
import json
sweep = pd.read_csv("sweep.csv")
meta = json.load(open("sweep.csv.json"))
types = {c["name"]: c["type"] for c in meta["columns"]}
assert list(types) == list(sweep.columns), (list(types), list(sweep.columns))
invalid = sweep["invalid_reason"].notna()
assert invalid.any() and (~invalid).any(), "the sweep should have valid and invalid rows"
plain = {"int": "int64", "float": "float64", "bool": "bool", "string": "object"}
# The varied keys are strings as --vary gave them; pandas infers their type from the values.
varied = set(sweep.columns[1:list(sweep.columns).index("gpus")])
for c, t in types.items():
    col = sweep[c]
    if c in varied:
        continue
    if c not in ("config", "invalid_reason"):  # no stand-in number for a row that did not run
        assert col[invalid].isna().all(), c
    if t == "string" or not col.isna().any():
        assert str(col.dtype) == plain[t], (c, t, str(col.dtype))
        continue
    # Empty exactly where the row did not run, or (oom_stage, oom_excess_bytes) did not run out
    # of memory.
    empty = invalid | (sweep["oom"] != True) if c in ("oom_stage", "oom_excess_bytes") else invalid
    assert col.isna().tolist() == empty.tolist(), c
    if t == "int":
        assert str(col.dtype) == "float64", (c, str(col.dtype))
        assert (col.dropna() == col.dropna().round()).all(), c
    elif t == "bool":
        assert str(col.dtype) == "object", (c, str(col.dtype))
        assert set(col.dropna().tolist()) <= {True, False}, c
    else:
        assert str(col.dtype) == "float64", (c, str(col.dtype))
nullable = {"int": "Int64", "float": "float64", "bool": "boolean", "string": "string"}
typed = pd.read_csv("sweep.csv", dtype={c: nullable[t] for c, t in types.items()})
for c, t in types.items():
    assert str(typed[c].dtype) == str(pd.Series(dtype=nullable[t]).dtype), (c, typed[c].dtype)
    assert typed[c].isna().tolist() == sweep[c].isna().tolist(), c
print("pandas", pd.__version__, "reads every CSV")
PY
else
  python3 - <<'PY'
import csv
for f in ["plan.csv", "sweep.csv", "bubble.csv"]:
    rows = list(csv.reader(open(f, newline="")))
    assert len(rows) > 1, f
    n = len(rows[0])
    assert all(len(r) == n for r in rows), f
    for i, name in enumerate(rows[0]):
        vals = [r[i] for r in rows[1:] if r[i] != ""]
        def kind(v):
            if v in ("true", "false"):
                return "bool"
            try:
                int(v)
                return "int"
            except ValueError:
                pass
            try:
                float(v)
                return "float"
            except ValueError:
                return "str"
        kinds = {kind(v) for v in vals}
        assert len(kinds) <= 1, (f, name, kinds)
print("no pandas here: the csv module reads every CSV")
PY
fi
