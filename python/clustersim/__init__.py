"""clustersim in Python: the simulator's commands as functions that return records.

    import clustersim
    r = clustersim.run("configs/experiments/gpt3-175B-64xA100.yaml", **{"parallel.tp": 4})
    r["step_time_s"], r["breakdown"]["pp_bubble_s"], r["memory"]["peak_bytes_max"]
    df = clustersim.sweep("configs/experiments/gpt3-175B-64xA100.yaml",
                          vary={"parallel.tp": [1, 2, 4, 8], "parallel.pp": [1, 2, 4, 8]})
    df = clustersim.scale("configs/experiments/gpt3-175B-64xA100.yaml", gpus=[64, 128, 256])
    df = clustersim.collective("dgx-h100", "all_reduce", gpus=16, max_bytes="1GiB")
    clustersim.presets()["hardware"]

Every function is the library call the `clustersim` command makes (the C++ in _core does all
the work; nothing here models anything):

- run() returns the dict `clustersim run EXPERIMENT --format json` prints, equal to json.loads
  of that output;
- collective() returns the rows of `clustersim collective --format json`;
- sweep() returns the rows of the CSV `clustersim sweep --out F.csv` writes (same columns,
  same values), and scale() one row per GPU count with the best layout's columns;
- collective(), sweep() and scale() return a pandas DataFrame when pandas can be imported, a
  list of dicts (records) otherwise; `records=True` asks for the records.

Overrides are the command's `--set KEY=VALUE` keys, given as keyword arguments. A dotted key
goes through ** (`run(exp, **{"parallel.tp": 4})`); a section may be given as a dict
(`run(exp, parallel={"tp": 4, "pp": 2})`), which is the same as its dotted keys. Values are
written as the command line would write them: True/False as true/false, numbers as numbers,
strings as they are.

Bad input raises clustersim.InputError (a ValueError): str(e) is the command's one-line
message, and e.file, e.line, e.column, e.key say where, when the library knew it (else None).

Presets are read from $CLUSTERSIM_CONFIG_DIR when set; else, for a package installed by
`cmake --install` (PREFIX/lib/pythonX.Y/site-packages/clustersim), from
PREFIX/share/clustersim/configs; else from the source tree the module was built from.
"""

import json
import os
import pathlib

# An installed package finds the presets installed beside it (cmake --install puts them in
# PREFIX/share/clustersim/configs and this file in PREFIX/lib/pythonX.Y/site-packages/clustersim).
# Set before _core loads: the C++ reads the variable when it first looks for a preset.
_here = pathlib.Path(__file__).resolve().parents
if "CLUSTERSIM_CONFIG_DIR" not in os.environ and len(_here) > 4:
    _installed = _here[4] / "share" / "clustersim" / "configs"
    if (_installed / "hardware").is_dir():
        os.environ["CLUSTERSIM_CONFIG_DIR"] = str(_installed)

from . import _core  # noqa: E402  (after the configs are located)
from ._core import InputError  # noqa: E402,F401

__all__ = ["InputError", "run", "collective", "sweep", "scale", "presets", "config_dir"]


def _input_error(message):
    """An InputError raised here (a bad argument): no file, line, column or key."""
    e = InputError(message)
    e.file = e.line = e.column = e.key = None
    return e


def _value(key, v):
    """A value as the command line writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise _input_error(f"--set {key}: expected a number, a string or a bool, got {type(v).__name__}")


def _settings(overrides):
    """Keyword arguments as --set pairs: dicts become dotted keys, in the order given."""
    out = []

    def add(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                add(f"{prefix}.{k}", v)
        else:
            out.append((prefix, _value(prefix, value)))

    for key, value in overrides.items():
        add(key, value)
    return out


def _table(columns, rows, records):
    """Rows as a DataFrame when pandas is there (and records were not asked for), else dicts."""
    dicts = [dict(zip(columns, row)) for row in rows]
    if records:
        return dicts
    try:
        import pandas
    except ImportError:
        return dicts
    return pandas.DataFrame.from_records(dicts, columns=columns)


def run(experiment, *, fidelity="analytic", **overrides):
    """One training step of EXPERIMENT (a YAML file), as `clustersim run --format json`.

    fidelity: "analytic", "flow" or "flow-full". Other keyword arguments override experiment
    keys (see the module's help). Returns a dict: step_time_s, tokens_per_s, mfu,
    bubble_fraction, breakdown, memory, oom, ...
    """
    return json.loads(_core.run(os.fspath(experiment), _settings(overrides), fidelity))


def collective(hardware, op, *, gpus=0, bytes=None, min_bytes="8", max_bytes="1GiB", factor=2,
               algo="auto", protocol="auto", fidelity="analytic", dtype="fp32", root=0,
               records=False):
    """A size sweep of one collective, as `clustersim collective --format json`.

    hardware: a preset name or a hardware file; gpus: 0 for one node; bytes: one size (an int
    or "100MiB"), else min_bytes, min_bytes * factor, ... up to max_bytes. One row per size:
    op, algo, protocol, gpus, bytes, count, dtype, root, fidelity, time_us, algbw_gbps,
    busbw_gbps (GB/s, 10^9 bytes, as nccl-tests), time_band.
    """
    rows = json.loads(_core.collective(
        os.fspath(hardware), int(gpus), op, None if bytes is None else str(bytes),
        str(min_bytes), str(max_bytes), int(factor), algo, protocol, fidelity, dtype, int(root)))
    columns = list(rows[0].keys()) if rows else []
    return _table(columns, [list(r.values()) for r in rows], records)


def sweep(experiment, vary, *, gpus=0, max_memory="", fidelity="analytic", jobs=0,
          records=False, **overrides):
    """Every combination of VARY ({key: [values]}) on EXPERIMENT, as `clustersim sweep`.

    One row per configuration in configuration order (the last key varies fastest), with the
    columns of the sweep's CSV: config, the varied keys, gpus, tp, pp, dp, ..., step_time_s,
    tokens_per_s, mfu, ..., oom, invalid_reason (a configuration that cannot run has empty
    results and its reason). gpus: fix the GPU count (dp = gpus / (tp x pp)); max_memory: the
    memory per GPU for the out-of-memory verdict ("40GiB"); jobs: threads (0: every core).
    Keyword arguments fix experiment keys in every configuration.
    """
    if not isinstance(vary, dict) or not vary:
        raise _input_error("vary: give at least one {key: [values]}, e.g. {'parallel.tp': [1, 2, 4]}")
    axes = []
    for key, values in vary.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            values = [values]
        axes.append((key, [_value(key, v) for v in values]))
    columns, rows = _core.sweep(os.fspath(experiment), axes, _settings(overrides), int(gpus),
                                str(max_memory), fidelity, int(jobs))
    return _table(columns, rows, records)


def scale(experiment, gpus, *, tokens=0, max_memory="", fidelity="analytic", jobs=0,
          records=False, **overrides):
    """Per GPU count the fastest layout that fits, as `clustersim scale` plans it.

    gpus: a list of counts or the command's text ("64,128,...,1024"). One row per count:
    gpus, tried, valid, fit, found, reason (why no layout can use the count, where none
    can), the best layout's columns as in sweep() (tp, pp, dp, micro_batch, schedule,
    recompute, step_time_s, tokens_per_s, mfu, ...; None where nothing fits), zero,
    global_batch, efficiency (tokens/s per GPU against the first count that found a layout)
    and train_s (the time to train `tokens`; 0: 20 tokens per parameter, as `scale` takes it).
    A key given as an override is not searched.
    """
    counts = _core.parse_int_list("gpus", gpus) if isinstance(gpus, str) else [int(g) for g in gpus]
    columns, rows = _core.scale(os.fspath(experiment), counts, _settings(overrides),
                                str(max_memory), fidelity, int(jobs), float(tokens))
    return _table(columns, rows, records)


def presets():
    """The preset names, by kind: {"hardware": [...], "models": [...], "experiments": [...]}."""
    return _core.presets()


def config_dir():
    """The configs/ directory presets are read from."""
    return _core.config_dir()
