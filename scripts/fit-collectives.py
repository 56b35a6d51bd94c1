#!/usr/bin/env python3
"""Fits the `collectives:` parameters of the NVSwitch presets to whole measured curves.

    scripts/fit-collectives.py            # prints the fitted values and the errors

The model is the one strategies/collectives/communicator.cpp evaluates for one NVSwitch node
(ring, double binary tree and NVLS all-reduce; ring all-gather and reduce-scatter), with NCCL's
tuning.cc base and per-step latencies fixed. Free parameters, shared by every point of every
curve of a GPU generation (nothing per point):
  - launch_latency   (added to NCCL's per-protocol base latency),
  - Simple's NVLink efficiency (LL = 0.5x it: a 4-byte flag per 4 bytes of data; LL128 = 120/128x),
  - memory_passes    (HBM traffic per buffer byte, in series with the transfers),
  - NVLS latency and efficiency (Hopper only).
A100: data/reference/a100-node/nccl-all-reduce-{2,4,8}gpu.csv (every 8th row), the nccl-tests
log (floor and plateau, and every row), the A100 column of the 8-GPU busbw table.
H100/H200 (one fit, the presets differ in HBM bandwidth only): the H100 and H200 busbw columns,
h200-8gpu-large-messages.yaml (by GPU count and by collective) and the lecture's two benchmarks.
Least squares of relative errors, Nelder-Mead; plain Python and PyYAML; takes a few minutes.
"""
import math
import os
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "data", "reference")

BASE = {"ll": 6.6e-6, "ll128": 14.0e-6, "simple": 8.4e-6}   # tuning.cc ring base latency
ALPHA = {"ll": 0.6e-6, "ll128": 1.9e-6, "simple": 3.4e-6}   # tuning.cc ring NVLink step latency
SHARE = {"ll": 0.5, "ll128": 120 / 128, "simple": 1.0}     # of Simple's efficiency
CHUNK = {"ll": 32 * 1024, "ll128": 576 * 1024, "simple": 512 * 1024}


def btree_parent(r, n):
    if r == 0:
        return -1
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    return r ^ bit if up >= n else up


def tree_windows(n):
    """Port loads of NCCL's double binary tree on one NVSwitch node: window[lo][hi] = the
    largest number of chunks a GPU port carries in a step that runs stages lo..hi."""
    parents = []
    for t in range(2):
        p = []
        for q in range(n):
            if t == 0:
                u = btree_parent(q, n)
            elif n % 2 == 0:
                u = btree_parent(n - 1 - q, n)
                u = -1 if u < 0 else n - 1 - u
            else:
                u = btree_parent((q - 1 + n) % n, n)
                u = -1 if u < 0 else (u + 1) % n
            p.append(u)
        parents.append(p)
    depth = [[0] * n for _ in range(2)]
    D = 0
    for t in range(2):
        for r in range(n):
            d, u = 0, parents[t][r]
            while u >= 0:
                d, u = d + 1, parents[t][u]
            depth[t][r] = d
            D = max(D, d)
    stages = []
    for o in range(2 * D):
        hops = []
        for t in range(2):
            for r in range(n):
                u = parents[t][r]
                if u < 0:
                    continue
                if o < D and depth[t][r] == D - o:
                    hops.append((r, u))
                if o >= D and depth[t][r] - 1 == o - D:
                    hops.append((u, r))
        stages.append(hops)
    S = len(stages)
    win = [[0.0] * S for _ in range(S)]
    for lo in range(S):
        out, inn = [0] * n, [0] * n
        for hi in range(lo, S):
            for a, b in stages[hi]:
                out[a] += 1
                inn[b] += 1
            win[lo][hi] = max(max(out), max(inn))
    return D, win


TREES = {}


def tree_time(S, n, launch, alpha, B, chunk):
    if n not in TREES:
        TREES[n] = tree_windows(n)
    D, win = TREES[n]
    St = 2 * D
    half = S / 2
    K = max(1, math.ceil(half / chunk))
    c = half / K
    total = max(0, K - St + 1) * win[0][St - 1]
    for r in list(range(0, min(St - 1, K + St - 1))) + list(range(max(K, St - 1), K + St - 1)):
        total += win[max(0, r - K + 1)][min(St - 1, r)]
    return launch + St * alpha + total * c / B


def predict(op, S, n, hw, prm, algo="auto"):
    """Seconds; hw = (nvlink B/s, HBM B/s, fp32 FLOP/s, nvls?)."""
    B_link, B_hbm, fp32, nvls = hw
    mem = prm["h"] * S / B_hbm
    adds = (n - 1) / n * S / 4 / fp32
    best = None
    for p in ("ll", "ll128", "simple"):
        launch = prm["L0"] + BASE[p]
        B = prm["e"] * SHARE[p] * B_link
        cands = []
        if algo in ("auto", "ring"):
            steps = 2 * (n - 1) if op == "all_reduce" else n - 1
            cands.append(("ring", launch + steps * (ALPHA[p] + S / n / B)))
        if op == "all_reduce" and n >= 2 and algo in ("auto", "tree"):
            cands.append(("tree", tree_time(S, n, launch, ALPHA[p], B, CHUNK[p])))
        if nvls and n >= 2 and p == "simple" and algo in ("auto", "nvls"):
            share = (n + 1) / n if op == "all_reduce" else 1.0
            cands.append(("nvls", launch + prm["lat"] + share * S / (prm["en"] * B_link)))
        for name, t in cands:
            local = max(mem, 0 if name == "nvls" or op == "all_gather" else adds)
            if best is None or t + local < best[0]:
                best = (t + local, name, p)
    return best


def rows(path, sep=","):
    out = []
    for line in open(os.path.join(DATA, path)):
        if line.startswith("#") or not line.strip() or line.startswith(("size", "bytes")):
            continue
        out.append(line.split(sep) if sep else line.split())
    return out


def a100_errors(prm):
    hw = (300e9, 2039e9, 19.5e12, False)
    e = {}
    for n in (2, 4, 8):
        pts = rows(f"a100-node/nccl-all-reduce-{n}gpu.csv")[::8]
        errs = [predict("all_reduce", int(r[0]), n, hw, prm)[0] / (float(r[3]) * 1e-9) - 1
                for r in pts]
        e[f"csv{n}"] = sum(abs(x) for x in errs) / len(errs)
        big = [x for r, x in zip(pts, errs) if int(r[0]) >= 64 << 20]
        e[f"csv{n}>=64M"] = sum(abs(x) for x in big) / len(big)
    log = rows("nccl/a100-8gpu-all_reduce.nccl-tests.txt", None)
    e["floor"] = predict("all_reduce", 8, 8, hw, prm)[0] / (float(log[0][5]) * 1e-6) - 1
    S = int(log[-1][0])
    e["plateau"] = 1.75 * S / predict("all_reduce", S, 8, hw, prm)[0] / 1e9 / float(log[-1][7]) - 1
    errs = [predict("all_reduce", int(r[0]), 8, hw, prm)[0] / (float(r[5]) * 1e-6) - 1 for r in log]
    e["log"] = sum(abs(x) for x in errs) / len(errs)
    curve = rows("nccl/busbw-8gpu-all_reduce-a100-h100-h200.csv")
    errs = [1.75 * int(r[0]) / predict("all_reduce", int(r[0]), 8, hw, prm)[0] / 1e9 / float(r[1]) - 1
            for r in curve]
    e["busbw"] = sum(abs(x) for x in errs) / len(errs)
    return e


def hopper_errors(prm):
    h100 = (450e9, 3350e9, 67e12, True)
    h200 = (450e9, 4800e9, 67e12, True)
    e = {}
    curve = rows("nccl/busbw-8gpu-all_reduce-a100-h100-h200.csv")
    for col, name, hw in ((2, "h100", h100), (3, "h200", h200)):
        errs = [(int(r[0]), 1.75 * int(r[0]) / predict("all_reduce", int(r[0]), 8, hw, prm)[0]
                 / 1e9 / float(r[col]) - 1) for r in curve]
        e[name + ">=16M max"] = max(abs(x) for s, x in errs if s >= 16 << 20)
        e[name + " all"] = sum(abs(x) for _, x in errs) / len(errs)
    big = yaml.safe_load(open(os.path.join(DATA, "nccl/h200-8gpu-large-messages.yaml")))
    S = 16 << 30
    m = big["collectives_16GiB_8gpus"]
    e["ring16"] = 1.75 * S / predict("all_reduce", S, 8, h200, prm, "ring")[0] / 1e9 / m["all_reduce_ring"] - 1
    e["nvls16"] = 1.75 * S / predict("all_reduce", S, 8, h200, prm, "nvls")[0] / 1e9 / m["all_reduce_nvls"] - 1
    e["ag16"] = 0.875 * S / predict("all_gather", S, 8, h200, prm)[0] / 1e9 / m["all_gather"] - 1
    e["rs16"] = 0.875 * S / predict("reduce_scatter", S, 8, h200, prm)[0] / 1e9 / m["reduce_scatter"] - 1
    S = 8 << 30
    worst = 0
    for n, v in big["all_reduce_8GiB_by_gpu_count"].items():
        f = 2 * (n - 1) / n
        worst = max(worst, abs(f * S / predict("all_reduce", S, n, h200, prm, "ring")[0] / 1e9 / v["busbw_no_nvls"] - 1))
        if v["algo"] == "nvls":
            worst = max(worst, abs(f * S / predict("all_reduce", S, n, h200, prm, "nvls")[0] / 1e9 / v["busbw"] - 1))
    e["by count max"] = worst
    lecture = yaml.safe_load(open(os.path.join(DATA, "lecture/cs336-parallelism-2.yaml")))["collective_benchmarks"]
    ar, rs = lecture["all_reduce"], lecture["reduce_scatter"]
    e["lecture ar"] = predict("all_reduce", ar["elements"] * 4, 4, h100, prm)[0] / (sum(ar["measured_seconds"]) / 2) - 1
    e["lecture rs"] = predict("reduce_scatter", rs["input_elements"] * 4, 4, h100, prm)[0] / (sum(rs["measured_seconds"]) / 2) - 1
    return e


def nelder_mead(f, x0, steps, iters=1200):
    n = len(x0)
    pts = [list(x0)] + [[x0[j] + (steps[j] if j == i else 0) for j in range(n)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        c = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        xr = [c[j] + (c[j] - pts[-1][j]) for j in range(n)]
        fr = f(xr)
        if fr < vals[0]:
            xe = [c[j] + 2 * (c[j] - pts[-1][j]) for j in range(n)]
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = [c[j] + 0.5 * (pts[-1][j] - c[j]) for j in range(n)]
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [[pts[0][j] + 0.5 * (p[j] - pts[0][j]) for j in range(n)] for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    best = min(range(n + 1), key=lambda i: vals[i])
    return pts[best]


def fit(errors, names, x0, steps, bounds):
    def objective(x):
        if any(not (lo <= v <= hi) for v, (lo, hi) in zip(x, bounds)):
            return 1e9
        return sum(v * v for v in errors(dict(zip(names, x))).values())
    x = nelder_mead(objective, x0, steps)
    x = nelder_mead(objective, x, [s / 4 for s in steps])
    return dict(zip(names, x))


def report(title, prm, errors):
    print(f"{title}:")
    for k, v in prm.items():
        print(f"  {k:4s} = {v * 1e6:.1f} us" if k in ("L0", "lat") else f"  {k:4s} = {v:.3f}")
    for k, v in errors(prm).items():
        print(f"    {k:16s} {100 * v:+.1f}%")


if __name__ == "__main__":
    a100 = fit(a100_errors, ["L0", "e", "h"], [30e-6, 0.95, 3.0], [5e-6, 0.05, 0.5],
               [(0, 1e-3), (0.05, 1.0), (0, 20)])
    report("dgx-a100 (launch_latency, simple.nvlink.efficiency, memory_passes)", a100, a100_errors)
    hopper = fit(hopper_errors, ["L0", "e", "h", "lat", "en"], [20e-6, 0.86, 1.3, 36e-6, 0.73],
                 [5e-6, 0.05, 0.5, 10e-6, 0.05],
                 [(0, 1e-3), (0.05, 1.0), (0, 20), (0, 1e-3), (0.05, 1.0)])
    report("dgx-h100 and hgx-h200 (... plus nvls.latency, nvls.efficiency)", hopper, hopper_errors)
    sys.exit(0)
