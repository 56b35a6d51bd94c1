#!/usr/bin/env python3
"""Fits the GEMM parameters of the `compute:` section of the hardware presets.

    scripts/fit-gemm-efficiency.py [data/reference/gemm/matmul-throughput.csv]

The model is hardware/compute_model.h's, restated here (keep the two in step):

    per CTA tile (tm, tn):  tiles = ceil(m/tm) ceil(n/tn); waves = ceil(tiles / SMs)
                            rate  = min(1, I(tm,tn) / I(full_rate_tile)), I(a,b) = ab/(a+b)
                            W     = waves * SMs * 2 tm tn k / rate
    t_comp = (min over tiles of W + W_half) / (peak * eff[dtype])
    t_mem  = (A + B bytes + B_half) / (hbm_bw * mem_eff)
    t_epi  = C bytes (bf16 for fp8: the output type) / (hbm_bw * mem_eff)
    t      = (t_comp^p + t_mem^p)^(1/p) + t_epi + launch

Fixed beforehand (not fitted): launch 2 us, the memory efficiency (the measured copy bandwidth
the hardware presets cite, configs/hardware/*.yaml memory.efficiency) and B_half (1 us of ramp at that bandwidth), the CTA tiles, the full-rate
tile (128x128 on A100, 128x256 on Hopper). Fitted over the whole table at once: the sharpness p
(one value), W_half per GPU family (A100, Hopper) and the sustained efficiency per family and
dtype class (A100 16-bit, Hopper fp8, Hopper 16-bit): six numbers for 22 rows, never one per row.
Efficiencies are fitted in closed form (the geometric mean of measured/predicted in each group,
iterated); p and W_half on a grid, minimising mean |error| + worst |error| / 4.

The Hopper presets set gpu.sustained_clock_mhz (dgx-h100: 1500 of 1980 MHz): Azure's rows (long
warm-up) run at it, mamf's (best of a search) at the boost clock. The fp8 efficiency this script
prints is the fraction at the sustained clock; the preset holds it divided by 1500 / 1980.
"""
import csv
import math
import sys

CSV = sys.argv[1] if len(sys.argv) > 1 else "data/reference/gemm/matmul-throughput.csv"

# GPU -> (SMs, HBM bytes/s, memory efficiency, family); datasheets and configs/hardware/*.yaml.
GPUS = {
    "a100-sxm4-80gb": (108, 2.039e12, 0.79, "a100"),
    "a100-sxm4": (108, 2.039e12, 0.79, "a100"),
    "a100-pcie": (108, 1.935e12, 0.79, "a100"),
    "h100-sxm": (132, 3.35e12, 0.866, "hopper"),
    "gh200": (132, 4.0e12, 0.866, "hopper"),
    "h200": (132, 4.8e12, 0.833, "hopper"),
}
LAUNCH = 2e-6
RAMP = 1e-6  # B_half / (hbm_bw * mem_eff)
TILES = [(256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64)]
FULL_RATE = {"a100": (128, 128), "hopper": (128, 256)}


def intensity(t):
    return t[0] * t[1] / (t[0] + t[1])


def group(row):
    return GPUS[row["gpu"]][3] + (" fp8" if row["dtype"] == "fp8" else " 16-bit")


def predict(row, p, w_half, eff):
    sms, bw, mem_eff, family = GPUS[row["gpu"]]
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    peak = float(row["peak_tflops"]) * 1e12
    elem = 1 if row["dtype"] == "fp8" else 2
    work = min(
        math.ceil(math.ceil(m / t[0]) * math.ceil(n / t[1]) / sms) * sms * 2 * t[0] * t[1] * k
        / min(1.0, intensity(t) / intensity(FULL_RATE[family]))
        for t in TILES)
    t_comp = (work + w_half[family]) / (peak * eff[group(row)])
    t_mem = (m * k + k * n) * elem / (bw * mem_eff) + RAMP
    t_epi = m * n * 2 / (bw * mem_eff)  # every row's output is 16-bit
    t = (t_comp**p + t_mem**p) ** (1 / p) + t_epi + LAUNCH
    return 2 * m * n * k / t / 1e12


def fit_efficiencies(rows, p, w_half):
    eff = {group(r): 0.8 for r in rows}
    for _ in range(8):
        for g in eff:
            logs = [math.log(predict(r, p, w_half, eff) / float(r["tflops"]))
                    for r in rows if group(r) == g]
            eff[g] *= math.exp(-sum(logs) / len(logs))
    return eff


def errors(rows, p, w_half, eff):
    return [(predict(r, p, w_half, eff) - float(r["tflops"])) / float(r["tflops"]) for r in rows]


def main():
    with open(CSV) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    best = None
    for p in (2.0, 2.25, 2.5, 2.75, 3.0, 4.0):
        for wa in (x * 0.1e9 for x in range(0, 11)):
            for wh in (x * 0.25e9 for x in range(0, 21)):
                w_half = {"a100": wa, "hopper": wh}
                eff = fit_efficiencies(rows, p, w_half)
                e = [abs(x) for x in errors(rows, p, w_half, eff)]
                score = sum(e) / len(e) + max(e) / 4
                if best is None or score < best[0]:
                    best = (score, p, w_half, eff)
    _, p, w_half, eff = best
    print(f"roofline_sharpness p = {p}")
    for fam, w in w_half.items():
        print(f"half_efficiency_flops[{fam}] = {w:.3g}")
    for g, e in sorted(eff.items()):
        print(f"efficiency[{g}] = {e:.3f}")
    errs = errors(rows, p, w_half, eff)
    for r, e in zip(rows, errs):
        print(f"{r['gpu']:15} {r['dtype']:5} {r['m']:>7}x{r['n']:>6}x{r['k']:>6}  measured "
              f"{float(r['tflops']):7.1f}  predicted {predict(r, p, w_half, eff):7.1f}  {100 * e:+6.1f}%")
    print(f"mean |error| {100 * sum(map(abs, errs)) / len(errs):.1f}%, "
          f"worst {100 * max(map(abs, errs)):.1f}%")


if __name__ == "__main__":
    main()
