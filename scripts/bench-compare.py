#!/usr/bin/env python3
"""Compares the benchmarks of two builds: the median CPU time of each, and their ratio.

    scripts/bench-compare.py BASE_DIR NEW_DIR [--bench bench_training,bench_sweep]
                             [--filter REGEX] [--rounds 5] [--limit 5]

BASE_DIR and NEW_DIR are Release build directories with the benchmarks (scripts/bench.sh builds
one as build/bench; a worktree at an older commit gives the other). Each round runs every
benchmark program of both builds, alternating which goes first, so that a host whose load
drifts slows both alike; the median over rounds of each benchmark's CPU time is compared
(Google Benchmark's cpu_time: the thread's CPU, not the wall clock, so other work on a shared
host counts less; real_time for the benchmarks timed in real time, whose work runs on other
threads). A benchmark whose median moved by more than --limit percent is listed as a
change, and the exit status is 1 when any got slower by more than that.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(build, program, pattern):
    path = os.path.join(build, "bench", program)
    out = subprocess.run([path, f"--benchmark_filter={pattern}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True,
                         env=dict(os.environ, CLUSTERSIM_CONFIG_DIR=os.path.join(
                             os.path.dirname(os.path.abspath(__file__)), "..", "configs")))
    result = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        # A benchmark timed in real time (threads, or a whole command) is compared by it: the
        # main thread's CPU time leaves out the workers'.
        measure = "real_time" if "/real_time" in b["name"] else "cpu_time"
        result[f"{program}:{b['name']}"] = b[measure] * scale
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--bench", default="bench_training,bench_sweep,bench_models,bench_kineto")
    parser.add_argument("--filter", default=".")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit", type=float, default=5.0)
    args = parser.parse_args()
    samples = {"base": {}, "new": {}}
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        for program in args.bench.split(","):
            for side, build in order:
                for name, t in run(build, program, args.filter).items():
                    samples[side].setdefault(name, []).append(t)
    slower = 0
    print(f"{'benchmark':70} {'base':>11} {'new':>11} {'new/base':>9}")
    for name in sorted(samples["base"]):
        if name not in samples["new"]:
            print(f"{name:70} {'':>11} {'(gone)':>11}")
            continue
        b = statistics.median(samples["base"][name])
        n = statistics.median(samples["new"][name])
        ratio = n / b if b > 0 else float("nan")
        flag = ""
        if ratio > 1 + args.limit / 100:
            flag = "  slower"
            slower += 1
        elif ratio < 1 - args.limit / 100:
            flag = "  faster"
        print(f"{name:70} {b * 1e3:9.3f}ms {n * 1e3:9.3f}ms {ratio:9.3f}{flag}")
    print(f"\n{args.rounds} rounds, medians of CPU time; limit {args.limit:g}%: "
          f"{slower} benchmark(s) slower")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
