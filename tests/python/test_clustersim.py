"""The clustersim Python module against the command: the same library calls, so the same
records (python/clustersim/__init__.py). Run by ctest as python.pytest with PYTHONPATH at the
build tree's package, CLUSTERSIM_CLI the clustersim binary and CLUSTERSIM_SOURCE_DIR the
repository."""

import csv
import json
import os
import pathlib
import subprocess
import sys

import pytest

import clustersim

SOURCE = pathlib.Path(os.environ.get("CLUSTERSIM_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
CLI = os.environ.get("CLUSTERSIM_CLI", "clustersim")
GPT3 = str(SOURCE / "configs/experiments/gpt3-175B-64xA100.yaml")
MLP = str(SOURCE / "configs/experiments/lecture-mlp-pipeline.yaml")
MIXTRAL = str(SOURCE / "configs/experiments/mixtral-8x7B-64xH100.yaml")


def cli(*args):
    done = subprocess.run([CLI, *args], capture_output=True, text=True, check=True)
    return done.stdout


def cli_json(*args):
    return json.loads(cli(*args))


# --- run ----------------------------------------------------------------------------------

def test_run_is_the_commands_json():
    # The check: the same step time, and the same record, key for key.
    r = clustersim.run(GPT3)
    want = cli_json("run", GPT3, "--format", "json")
    assert r["step_time_s"] == want["step_time_s"]
    assert r == want


@pytest.mark.parametrize("path, sets, fidelity", [
    (GPT3, {"parallel.tp": 4, "parallel.pp": 16, "parallel.virtual_stages": 1,
            "parallel.schedule": "1f1b"}, "analytic"),
    (MIXTRAL, {}, "analytic"),
    (MLP, {"training.micro_batch": 2}, "flow"),
    (MLP, {"training.micro_batch": 16}, "flow-full"),
])
def test_run_with_overrides_is_the_commands_json(path, sets, fidelity):
    args = ["run", path, "--format", "json", "--fidelity", fidelity]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    assert clustersim.run(path, fidelity=fidelity, **sets) == cli_json(*args)


def test_nested_overrides_are_dotted_keys():
    dotted = clustersim.run(GPT3, **{"parallel.tp": 4, "parallel.pp": 16,
                                     "parallel.virtual_stages": 1, "parallel.schedule": "1f1b"})
    nested = clustersim.run(GPT3, parallel={"tp": 4, "pp": 16, "virtual_stages": 1,
                                            "schedule": "1f1b"})
    assert dotted == nested
    assert dotted["parallel"]["tp"] == 4 and dotted["parallel"]["pp"] == 16
    # An override changes the step: a different layout, a different time.
    assert dotted["step_time_s"] != clustersim.run(GPT3)["step_time_s"]


def test_bools_are_written_as_the_command_line_writes_them():
    off = clustersim.run(GPT3, **{"parallel.sequence_parallel": False})
    assert off == cli_json("run", GPT3, "--format", "json", "--set",
                           "parallel.sequence_parallel=false")


# --- errors -------------------------------------------------------------------------------

def test_a_bad_value_in_a_file_names_file_line_and_key(tmp_path):
    text = pathlib.Path(GPT3).read_text().replace("  tp: 8\n", "  tp: eight\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    line = text.splitlines().index("  tp: eight") + 1
    with pytest.raises(clustersim.InputError) as caught:
        clustersim.run(str(bad))
    e = caught.value
    assert isinstance(e, ValueError)
    assert e.file == str(bad)
    assert e.line == line
    assert e.key == "parallel.tp"
    # The message is the command's, word for word.
    done = subprocess.run([CLI, "run", str(bad)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == f"clustersim: error: {e}"


def test_an_unknown_override_is_an_input_error():
    with pytest.raises(clustersim.InputError, match="parallel.tpp"):
        clustersim.run(GPT3, **{"parallel.tpp": 4})


def test_a_value_python_cannot_write_is_refused():
    with pytest.raises(clustersim.InputError, match="parallel.tp"):
        clustersim.run(GPT3, **{"parallel.tp": [4]})


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(clustersim.InputError) as caught:
        clustersim.run(str(tmp_path / "none.yaml"))
    assert "none.yaml" in str(caught.value)


# --- collective ---------------------------------------------------------------------------

@pytest.mark.parametrize("hardware, op, gpus, extra, args", [
    ("dgx-h100", "all_reduce", 16, {"min_bytes": "1KiB", "max_bytes": "1GiB", "factor": 4},
     ["--min-bytes", "1KiB", "--max-bytes", "1GiB", "--factor", "4"]),
    ("dgx-a100", "all_gather", 8, {"bytes": 1 << 20, "dtype": "bf16"},
     ["--bytes", str(1 << 20), "--dtype", "bf16"]),
    ("dgx-a100", "broadcast", 8, {"bytes": "64MiB", "root": 3, "fidelity": "flow"},
     ["--bytes", "64MiB", "--root", "3", "--fidelity", "flow"]),
])
def test_collective_is_the_commands_json(hardware, op, gpus, extra, args):
    rows = clustersim.collective(hardware, op, gpus=gpus, records=True, **extra)
    want = cli_json("collective", "--hardware", hardware, "--op", op, "--gpus", str(gpus),
                    "--format", "json", *args)
    assert rows == want
    assert len(rows) >= 1


def test_collective_errors_name_the_flag():
    with pytest.raises(clustersim.InputError, match="--op: unknown collective 'allreduc'"):
        clustersim.collective("dgx-a100", "allreduc")
    with pytest.raises(clustersim.InputError, match="--root 9: ranks are 0 to 7"):
        clustersim.collective("dgx-a100", "broadcast", root=9)


# --- sweep --------------------------------------------------------------------------------

def read_sweep_csv(path):
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = list(csv.reader(lines))
    return rows[0], rows[1:]


def same_field(value, field):
    """A typed value of sweep() against the CSV's text of it."""
    if value is None:
        return field == ""
    if isinstance(value, bool):
        return field == ("true" if value else "false")
    if isinstance(value, (int, float)):
        return float(field) == value
    return field == value


def test_sweep_rows_are_the_commands_csv(tmp_path):
    vary = {"parallel.tp": [2, 4, 8], "parallel.pp": [4, 8, 16], "training.micro_batch": [1, 3]}
    records = clustersim.sweep(GPT3, vary, records=True, jobs=2)
    out = tmp_path / "sweep.csv"
    cli("sweep", GPT3, "--vary", "parallel.tp=2,4,8", "--vary", "parallel.pp=4,8,16",
        "--vary", "training.micro_batch=1,3", "--out", str(out), "--jobs", "2")
    columns, rows = read_sweep_csv(out)
    assert len(records) == len(rows) == 18
    for record, row in zip(records, rows):
        assert list(record.keys()) == columns
        for c, field in zip(columns, row):
            assert same_field(record[c], field), (c, record[c], field)
    # Some configurations cannot run (micro-batch 3 does not divide the batch): a reason, no time.
    invalid = [r for r in records if r["invalid_reason"] is not None]
    assert invalid and all(r["step_time_s"] is None for r in invalid)
    assert all(isinstance(r["oom"], bool) for r in records if r["invalid_reason"] is None)


def test_sweep_row_is_the_run_of_its_configuration():
    records = clustersim.sweep(GPT3, {"parallel.tp": [4, 8]}, records=True, jobs=1,
                               **{"parallel.pp": 8})
    for r in records:
        one = clustersim.run(GPT3, **{"parallel.tp": r["parallel.tp"], "parallel.pp": 8,
                                      "parallel.dp": r["dp"]})
        # The CSV keeps nine significant digits.
        assert r["step_time_s"] == pytest.approx(one["step_time_s"], rel=1e-8)


def test_sweep_errors_are_the_commands():
    with pytest.raises(clustersim.InputError, match="--vary parallel.tpp: unknown key"):
        clustersim.sweep(GPT3, {"parallel.tpp": [1, 2]})
    with pytest.raises(clustersim.InputError, match="vary: give at least one"):
        clustersim.sweep(GPT3, {})


def test_sweep_is_a_dataframe_with_pandas():
    pandas = pytest.importorskip("pandas")
    df = clustersim.sweep(GPT3, {"parallel.tp": [4, 8]}, jobs=1)
    assert isinstance(df, pandas.DataFrame)
    assert list(df.columns)[:2] == ["config", "parallel.tp"]
    assert len(df) == 2
    assert df["step_time_s"].dtype.kind == "f"


def test_records_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    rows = clustersim.sweep(GPT3, {"parallel.tp": [4, 8]}, jobs=1)
    assert isinstance(rows, list) and isinstance(rows[0], dict)


# --- scale --------------------------------------------------------------------------------

def test_scale_winner_is_a_run_and_the_best_of_its_sweep():
    rows = clustersim.scale(MLP, [2, 4], records=True, jobs=2)
    assert [r["gpus"] for r in rows] == [2, 4]
    first = rows[0]
    assert first["found"] and first["efficiency"] == 1.0
    for r in rows:
        assert r["fit"] <= r["valid"] <= r["tried"]
        settings = {"gpus": r["gpus"], "parallel.tp": r["tp"], "parallel.pp": r["pp"],
                    "parallel.dp": r["dp"], "parallel.cp": r["cp"], "parallel.ep": r["ep"],
                    "parallel.zero": r["zero"], "training.global_batch": r["global_batch"],
                    "training.micro_batch": r["micro_batch"],
                    "parallel.recompute": r["recompute"], "parallel.schedule": r["schedule"],
                    "parallel.virtual_stages": r["virtual_stages"]}
        one = clustersim.run(MLP, **settings)
        assert r["tokens_per_s"] == pytest.approx(one["tokens_per_s"], rel=1e-8)
    # The text form of --gpus is the command's.
    again = clustersim.scale(MLP, "2,4", records=True, jobs=2)
    assert again == rows


def test_scale_gives_a_count_no_layout_uses_a_row_saying_why():
    # 5 GPUs: only tp 1 x pp 1 divides them, and dp 5 does not divide the batch of 64; the
    # other count is still planned.
    rows = clustersim.scale(GPT3, [5, 64], records=True, jobs=1)
    assert not rows[0]["found"] and "5" in rows[0]["reason"]
    assert rows[0]["step_time_s"] is None
    assert rows[1]["found"] and rows[1]["reason"] is None


# --- presets ------------------------------------------------------------------------------

def test_presets_are_the_config_files():
    p = clustersim.presets()
    configs = pathlib.Path(clustersim.config_dir())
    for kind in ("hardware", "models", "experiments"):
        assert p[kind] == sorted(f.stem for f in (configs / kind).glob("*.yaml"))
    assert "dgx-a100" in p["hardware"] and "gpt3-175B" in p["models"]


# --- the example --------------------------------------------------------------------------

def test_the_example_runs(tmp_path):
    script = SOURCE / "examples/python/scaling.py"
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "scaling.csv").is_file()
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "scaling.png").is_file()
    except ImportError:
        assert "matplotlib" in done.stdout
