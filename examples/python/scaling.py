#!/usr/bin/env python3
"""GPT-3 175B on DGX A100 nodes: what more GPUs buy, from Python, as a notebook would ask it.

    cmake --build build --target clustersim_python    # the module, in build/python
    PYTHONPATH=build/python python3 examples/python/scaling.py
    # or, installed: PYTHONPATH=PREFIX/lib/python3.11/site-packages python3 ...

Writes into examples/python/output/ (or --out DIR): scaling.csv, and scaling.png when
matplotlib is installed (python3-matplotlib). Each cell below is one step of a notebook.
"""

import argparse
import pathlib

import clustersim

here = pathlib.Path(__file__).resolve().parent
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default=here / "output", type=pathlib.Path,
                    help="folder for scaling.csv and scaling.png (default: %(default)s)")
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)
experiment = here.parents[1] / "configs" / "experiments" / "gpt3-175B-64xA100.yaml"

# %% One step of the experiment as it is written: a dict, the fields of `run --format json`.
step = clustersim.run(experiment)
print(f"64 GPUs as written: step {step['step_time_s']:.3f} s, MFU {step['mfu']:.1%}, "
      f"bubble {step['bubble_fraction']:.1%}")

# %% The same with tensor parallelism halved: keys are the command's --set keys.
tp4 = clustersim.run(experiment, parallel={"tp": 4, "pp": 16, "virtual_stages": 1,
                                           "schedule": "1f1b"})
print(f"tp 4 x pp 16: step {tp4['step_time_s']:.3f} s, "
      f"exposed TP comm {tp4['breakdown']['tp_comm_exposed_s']:.3f} s")

# %% Per GPU count the fastest layout that fits (a DataFrame with pandas, records without).
table = clustersim.scale(experiment, [64, 128, 256, 512], records=True)
columns = ["gpus", "tp", "pp", "dp", "micro_batch", "recompute", "step_time_s",
           "tokens_per_s", "mfu", "efficiency"]
with open(args.out / "scaling.csv", "w") as f:
    f.write(",".join(columns) + "\n")
    for row in table:
        f.write(",".join("" if row[c] is None else str(row[c]) for c in columns) + "\n")
for row in table:
    if row["found"]:
        print(f"{row['gpus']:>5} GPUs: tp {row['tp']} x pp {row['pp']} x dp {row['dp']}, "
              f"{row['tokens_per_s']:>9.0f} tokens/s, efficiency {row['efficiency']:.0%}")
    else:
        print(f"{row['gpus']:>5} GPUs: no layout fits")

# %% The scaling plot.
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no matplotlib (apt-get install python3-matplotlib): scaling.csv only")
else:
    found = [r for r in table if r["found"]]
    gpus = [r["gpus"] for r in found]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(gpus, [r["tokens_per_s"] for r in found], "o-", label="best layout")
    ax.plot(gpus, [found[0]["tokens_per_s"] * g / gpus[0] for g in gpus], "--",
            label="linear scaling")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("tokens/s")
    ax.set_title("GPT-3 175B on DGX A100: best layout per GPU count")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "scaling.png", dpi=120)
    print(f"plot: {args.out / 'scaling.png'}")
