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
