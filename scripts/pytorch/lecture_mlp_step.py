#!/usr/bin/env python3
"""Time one training step of the lecture's MLP on one GPU and write it as a clustersim
measurement file (docs/measurements.md), so that `clustersim validate` can compare the
simulator's prediction for the `lecture-mlp` model with what this GPU does.

The model is the one of Stanford CS336 "Parallelism 2" (data/reference/lecture): `layers`
square weights W of `dim` x `dim`, x = gelu(x @ W) for each, loss = mean(x^2), fp32, AdamW.
One step is forward + backward + optimizer step + zeroing the gradients. Each step is timed
with CUDA events; after a warm-up the median over `--steps` steps is written.

Usage: lecture_mlp_step.py --out STEP.json [--layers 4] [--dim 1024] [--batch 128]
                           [--steps 200] [--warmup 20] [--device cuda:0]
Exit codes: 0 written; 2 bad arguments; 3 no CUDA GPU (or no PyTorch with CUDA).
"""

import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import tempfile

FORMAT = "clustersim-measurements"
VERSION = 1


def driver_version():
    """The NVIDIA kernel driver's version, as `calibrate run` records it ("" when unknown)."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            line = f.readline()
    except OSError:
        return ""
    words = line.split()
    for i, w in enumerate(words):
        if w == "Module" and i + 1 < len(words):
            nxt = words[i + 1]
            if nxt == "for" and i + 3 < len(words):  # "Kernel Module for aarch64  550.54"
                nxt = words[i + 3]
            return nxt
    return ""


def measurement(environment, layers, dim, batch, time_ms):
    """The measurement file's content: one training step of the MLP on one GPU."""
    step = {
        "gpus": 1,
        "model": {"dim": dim, "kind": "mlp", "layers": layers},
        "training": {
            "dtype": "fp32",
            "global_batch": batch,
            "micro_batch": batch,
            "optimizer": "adamw",
        },
        "parallel": {"dp": 1, "pp": 1, "tp": 1},
        # Picosecond resolution, as clustersim stores times.
        "time_ms": round(time_ms, 9),
        "source": "scripts/pytorch/lecture_mlp_step.py",
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "environment": environment,
        "collectives": [],
        "gemms": [],
        "copies": [],
        "p2p": [],
        "launches": [],
        "steps": [step],
    }


def write_atomically(path, text):
    """Writes through a temporary file and a rename: a reader never sees half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def time_steps(layers, dim, batch, steps, warmup, device_name):
    """Median milliseconds of one training step, and the environment it ran in."""
    import torch  # imported here: the rest of this file works without PyTorch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        raise RuntimeError("PyTorch sees no CUDA GPU")
    device = torch.device(device_name)
    torch.manual_seed(0)
    # fp32 matmuls in full fp32, as the lecture ran them (no TF32 unless the person set it).
    torch.backends.cuda.matmul.allow_tf32 = False
    weights = [
        (torch.randn(dim, dim, device=device) / dim**0.5).requires_grad_() for _ in range(layers)
    ]
    optimizer = torch.optim.AdamW(weights, lr=1e-3)
    x0 = torch.randn(batch, dim, device=device)

    def step():
        x = x0
        for w in weights:
            x = F.gelu(x @ w)
        loss = x.square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize(device)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(steps):
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))  # milliseconds

    nccl = ""
    try:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    except (AttributeError, RuntimeError):
        pass
    environment = {
        "device": torch.cuda.get_device_name(device),
        "device_count": 1,
    }
    if driver_version():
        environment["driver_version"] = driver_version()
    environment["cuda_version"] = f"runtime {torch.version.cuda} (PyTorch {torch.__version__})"
    if nccl:
        environment["nccl_version"] = nccl
    environment["date"] = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    environment["host"] = socket.gethostname()
    environment["tool"] = "scripts/pytorch/lecture_mlp_step.py"
    return statistics.median(times), environment


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="measurement file to write (JSON)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200, help="timed steps (median kept)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args(argv)
    for name in ("layers", "dim", "batch", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: expected a positive integer, got {getattr(args, name)}")
    if args.warmup < 0:
        parser.error(f"--warmup: expected 0 or more, got {args.warmup}")
    directory = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(directory):
        parser.error(f"--out: directory '{directory}' does not exist")
    try:
        time_ms, environment = time_steps(
            args.layers, args.dim, args.batch, args.steps, args.warmup, args.device
        )
    except ImportError:
        print("lecture_mlp_step.py: error: PyTorch is not installed", file=sys.stderr)
        return 3
    except RuntimeError as e:
        print(f"lecture_mlp_step.py: error: {e}", file=sys.stderr)
        return 3
    content = measurement(environment, args.layers, args.dim, args.batch, time_ms)
    write_atomically(args.out, json.dumps(content, indent=2, sort_keys=False) + "\n")
    print(
        f"wrote {args.out}: lecture MLP ({args.layers} x {args.dim}, batch {args.batch}, fp32) "
        f"on {environment['device']}: {time_ms:.3f} ms per step (median of {args.steps})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
