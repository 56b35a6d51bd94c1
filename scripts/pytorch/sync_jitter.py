#!/usr/bin/env python3
"""Measure the host's jitter at a synchronisation on one node: the framework key `sync_jitter`
(strategies/parallel/framework_spec.h, straggler.h), which no document gives for a training
host and only GPUs can measure.

Every local GPU runs one process (torch.distributed, NCCL). Each iteration every rank runs the
same GEMMs, waits for its GPU (torch.cuda.synchronize(), as Megatron's pipeline exchanges and
its gradient-norm read do), runs `--host-work` small host operations (the Python between a
synchronisation and the next issue), and stamps the time it issues the next collective
(time.monotonic_ns: one clock for the whole node). Per iteration the stamps' deviations from
their median are the ranks' delays; a rank's mean delay over the iterations is its GPU's speed
(the slowest-GPU term, gpu_speed_spread) and is taken out; what remains is the jitter:

    sync_jitter = standard deviation of (delay - the rank's mean delay)

Also printed: the mean wait of the latest rank (max minus median), the quantity the model
predicts as sync_jitter x E[max of the ranks' standard normals]. Prints YAML lines.

Usage: torchrun --nproc-per-node 8 sync_jitter.py [--iterations 2000] [--warmup 100]
           [--gemm 4096] [--gemms 8] [--host-work 200]
Exit codes: 0 measured; 2 bad arguments; 3 no CUDA GPU (or no PyTorch with CUDA).
"""

import argparse
import os
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--gemm", type=int, default=4096, help="square GEMM size")
    p.add_argument("--gemms", type=int, default=8, help="GEMMs before each synchronisation")
    p.add_argument("--host-work", type=int, default=200,
                   help="small host operations between the synchronisation and the issue")
    a = p.parse_args()
    if a.iterations < 10 or a.warmup < 0 or a.gemm < 1 or a.gemms < 0 or a.host_work < 0:
        p.error("expected --iterations >= 10 and non-negative sizes")
    return a


def main():
    a = parse()
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("error: PyTorch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 3
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    world = dist.get_world_size()
    x = torch.randn(a.gemm, a.gemm, device="cuda", dtype=torch.bfloat16)
    token = torch.zeros(1, device="cuda")
    stamps = torch.zeros(world, dtype=torch.int64, device="cuda")
    delays = []  # per iteration: every rank's stamp minus the median
    for it in range(a.warmup + a.iterations):
        dist.barrier()
        for _ in range(a.gemms):
            x = torch.matmul(x, x).div_(a.gemm)
        torch.cuda.synchronize()
        acc = 0
        for i in range(a.host_work):
            acc += i
        t = time.monotonic_ns()
        dist.all_reduce(token)
        mine = torch.tensor([t], dtype=torch.int64, device="cuda")
        dist.all_gather_into_tensor(stamps, mine)
        if it >= a.warmup:
            s = stamps.tolist()
            med = statistics.median(s)
            delays.append([(v - med) * 1e-9 for v in s])
    if rank == 0:
        n = len(delays)
        mean = [sum(d[r] for d in delays) / n for r in range(world)]
        resid = [d[r] - mean[r] for d in delays for r in range(world)]
        jitter = statistics.pstdev(resid)
        latest = sum(max(d) for d in delays) / n
        print(f"ranks: {world}")
        print(f"iterations: {n}")
        print(f"sync_jitter: {jitter * 1e6:.2f}us")
        print(f"latest_rank_wait: {latest * 1e6:.2f}us")
        print(f"rank_mean_delay_spread: {statistics.pstdev(mean) * 1e6:.2f}us")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
