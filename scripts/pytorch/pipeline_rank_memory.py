#!/usr/bin/env python3
"""Measure the caching allocator's allocated and reserved peaks of one pipeline rank of a
torchtitan run with FSDP2 under torch.distributed.pipelining, replayed on one GPU with that
rank's tensor shapes: what clustersim's memory model of such a rank (strategies/parallel/
torch_pipelining.h, memory_accounting.h) is checked against, and what only a GPU can give.

The default is torchtitan's Llama 3.1 405B benchmark (benchmarks/llama3_h100_202412_torchtitan.md
at pytorch/torchtitan@b5bcd76c6, Table 5: tp 8, pp 8, FSDP 8, local batch 32 so 8 micro-batches
of 4 sequences of 8192, full activation checkpointing, 1F1B), pipeline rank 0 (16 layers here,
`--layers`): what one tensor-parallel rank holds, with sequence parallelism
(the block input [b, s / tp, h]).

What the replay runs, after torchtitan at 9dec370 and the PyTorch of December 2024:
- the sharded model state: fp32 parameters and AdamW's two moments, 1 / dp of the rank's
  parameters (FSDP2);
- each layer's weights gathered at its first forward of the step and held to the step's end
  (apply_fsdp's reshard_after_forward False under a pipeline; run_post_backward reshards), in
  bf16 (`--gathered-bytes 2`) or as one byte a weight (`--gathered-bytes 1`: the FP8
  all-gather, held as float8_e4m3fn and cast to bf16 for each matmul, the cast freed after it);
- on pipeline rank 0, the token embedding (its vocabulary / tp rows, torchtitan's
  RowwiseParallel), gathered in bf16 with its fp32 accumulator, and no input gradient;
- the 1F1B order of pipeline rank `--rank` of `--pp` (Schedule1F1B: pp - rank forwards, then a
  backward and a forward in turn, then the remaining backwards);
- each forward: the layers under torch.utils.checkpoint (non-reentrant, torchtitan's full
  activation checkpointing keeps each block's input), the sequence-parallel all-gather as a
  [b, s, h] copy of the block input and the reduce-scatter as a [b, s / tp, h] slice copied out,
  attention through scaled_dot_product_attention with the rank's heads; the stage's output kept
  to the step's end (output_chunks), a gradient receive buffer per micro-batch held from the
  step's start (_prepare_backward_infra);
- each backward: the recompute, the weight gradients in bf16, added into fp32 accumulators
  (FSDP2's unsharded_accumulated_grad: the first backward upcasts, the later ones add) and
  freed as each matmul's backward ends (a custom linear's backward stands for post_backward);
- after the last backward, layer by layer: the fp32 reduce-scatter input copied, the
  accumulator freed, the rank's shard written into its sharded gradient (foreach_reduce,
  without the collective), the gathered weights freed; then AdamW's foreach step
  (torch.optim.AdamW(foreach=True) on the shards).

After `--warmup` steps the peaks are reset and `--steps` steps run. Prints, one YAML line each:
allocated_peak_gib, reserved_peak_gib, held_gib (allocated between steps), and
fragmentation = (reserved - allocated) / (allocated - held), the share clustersim's
allocator_fragmentation key takes.

Usage: pipeline_rank_memory.py [--layers 16] [--hidden 16384] [--ffn 53248] [--heads 128]
           [--kv-heads 8] [--vocab 128256] [--seq 8192] [--micro-batch 4] [--tp 8] [--pp 8]
           [--rank 0] [--dp 8] [--gathered-bytes 1|2] [--steps 2] [--warmup 1]
           [--device cuda:0]
Needs about 80 GB for the default (an H200, or fewer `--layers` on an H100).
Exit codes: 0 measured; 2 bad arguments; 3 no CUDA GPU (or no PyTorch >= 2.4 with CUDA);
4 out of GPU memory (fewer `--layers`, or a larger GPU).
"""

import argparse
import sys


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in [("layers", 16), ("hidden", 16384), ("ffn", 53248), ("heads", 128),
                          ("kv-heads", 8), ("vocab", 128256), ("seq", 8192), ("micro-batch", 4), ("tp", 8),
                          ("pp", 8), ("rank", 0), ("dp", 8), ("gathered-bytes", 1),
                          ("steps", 2), ("warmup", 1)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--device", default="cuda:0")
    a = p.parse_args()
    if (min(a.layers, a.hidden, a.ffn, a.heads, a.kv_heads, a.vocab, a.seq, a.micro_batch,
            a.tp, a.pp, a.dp, a.steps) < 1 or a.warmup < 0
            or a.hidden % a.heads or a.heads % a.kv_heads or a.heads % a.tp or a.kv_heads % a.tp
            or a.seq % a.tp or a.ffn % a.tp or a.vocab % a.tp or not 0 <= a.rank < a.pp
            or a.gathered_bytes not in (1, 2)):
        p.error("heads, kv-heads, seq, ffn and vocab must divide by tp, hidden by heads, heads "
                "by kv-heads; 0 <= rank < pp; gathered-bytes 1 or 2; positive counts")
    return a


def main():
    a = parse()
    try:
        import torch
        import torch.nn.functional as F
        from torch.utils.checkpoint import checkpoint
    except ImportError:
        print("error: PyTorch is not installed", file=sys.stderr)
        return 3
    if not hasattr(F, "rms_norm"):
        print(f"error: PyTorch {torch.__version__} has no rms_norm (needs 2.4 or later)",
              file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 3
    try:
        return measure(a, torch, F, checkpoint)
    except torch.cuda.OutOfMemoryError as e:
        print(f"error: out of GPU memory ({e}); try fewer --layers", file=sys.stderr)
        return 4


def measure(a, torch, F, checkpoint):
    dev = torch.device(a.device)
    bf16, fp32 = torch.bfloat16, torch.float32
    h, tp, hd = a.hidden, a.tp, a.hidden // a.heads
    q, kv, f = a.heads // tp * hd, a.kv_heads // tp * hd, a.ffn // tp
    shapes = {"wq": (q, h), "wk": (kv, h), "wv": (kv, h), "wo": (h, q),
              "w1": (f, h), "w3": (f, h), "w2": (h, f)}
    hold = torch.float8_e4m3fn if a.gathered_bytes == 1 else bf16
    first = a.rank == 0
    emb_rows = a.vocab // tp
    n_params = a.layers * (sum(r * c for r, c in shapes.values()) + 2 * h) + \
        (emb_rows * h if first else 0)
    shard = (n_params + a.dp - 1) // a.dp
    master = torch.zeros(shard, dtype=fp32, device=dev, requires_grad=True)
    opt = torch.optim.AdamW([master], lr=1e-5, foreach=True)
    layers = [{"w": None, "acc": {}} for _ in range(a.layers)]  # gathered weights, accumulators
    embedding = {"w": None, "acc": {}}

    def gather(layer):
        # FSDP2's all-gather output at the layer's first forward of the step (its pre-forward
        # hook), held to the step's end.
        if layer["w"] is None:
            w = {k: torch.empty(s, dtype=hold, device=dev) for k, s in shapes.items()}
            w["attention_norm"] = torch.ones(h, dtype=bf16, device=dev)
            w["ffn_norm"] = torch.ones(h, dtype=bf16, device=dev)
            layer["w"] = w
        return layer["w"]

    class Embed(torch.autograd.Function):
        """The token embedding's lookup on this rank's vocabulary rows; its bf16 weight
        gradient (dense, as nn.Embedding's) handed to `grads`."""

        @staticmethod
        def forward(ctx, idx, w, grads):
            ctx.save_for_backward(idx)
            ctx.rows, ctx.grads = w.shape[0], grads
            return F.embedding(idx, w)

        @staticmethod
        def backward(ctx, gy):
            (idx,) = ctx.saved_tensors
            gw = torch.zeros(ctx.rows, gy.shape[-1], dtype=gy.dtype, device=gy.device)
            gw.index_add_(0, idx.flatten(), gy.flatten(0, -2))
            ctx.grads("tok_embeddings", gw)
            return None, None, None

    class Linear(torch.autograd.Function):
        """x @ W^T with W held gathered (FP8 or bf16) and cast for each matmul; its bf16
        weight gradient handed to `grads` (FSDP2's post_backward accumulation)."""

        @staticmethod
        def forward(ctx, x, w, name, grads):
            ctx.save_for_backward(x)
            ctx.w, ctx.name, ctx.grads = w, name, grads
            return x @ w.to(bf16).t()

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            gw = gy.flatten(0, -2).t() @ x.flatten(0, -2)
            ctx.grads(ctx.name, gw)
            return gy @ ctx.w.to(bf16), None, None, None

    def block(x, ws, grads):
        # One layer on this tensor-parallel rank: sequence-parallel gathers as copies, the
        # norms' weights left out of the gradients (2h of the layer's parameters).
        def lin(y, name):
            return Linear.apply(y, ws[name], name, grads)
        b, s = x.shape[0], x.shape[1] * tp
        y = F.rms_norm(x, (h,), ws["attention_norm"]).repeat(1, tp, 1)  # the all-gather
        xq = lin(y, "wq").view(b, s, -1, hd).transpose(1, 2)
        xk = lin(y, "wk").view(b, s, -1, hd).transpose(1, 2)
        xv = lin(y, "wv").view(b, s, -1, hd).transpose(1, 2)
        rep = xq.shape[1] // xk.shape[1]
        o = F.scaled_dot_product_attention(xq, xk.repeat_interleave(rep, 1),
                                           xv.repeat_interleave(rep, 1), is_causal=True)
        o = lin(o.transpose(1, 2).reshape(b, s, -1), "wo")
        x = x + o[:, : s // tp].clone()  # the reduce-scatter's shard
        y = F.rms_norm(x, (h,), ws["ffn_norm"]).repeat(1, tp, 1)
        y = lin(F.silu(lin(y, "w1")) * lin(y, "w3"), "w2")
        return x + y[:, : s // tp].clone()

    m = a.pp  # torchtitan's default: as many micro-batches as pipeline ranks
    tokens = (a.micro_batch, a.seq // tp, h)

    def step():
        grad_recv = [torch.empty(tokens, dtype=bf16, device=dev) for _ in range(m)]
        outputs, inflight = [], {}

        def hook_for(layer):
            def grads(name, g):
                acc = layer["acc"]
                if name in acc:
                    acc[name] += g
                else:
                    acc[name] = g.to(fp32)
            return grads

        def forward(i):
            if first:
                # The first stage's input is the token ids: no input gradient.
                if embedding["w"] is None:
                    embedding["w"] = torch.empty(emb_rows, h, dtype=bf16, device=dev)
                idx = torch.randint(0, emb_rows, tokens[:2], device=dev)
                x = Embed.apply(idx, embedding["w"], hook_for(embedding))
                inp = idx
            else:
                x = torch.randn(tokens, dtype=bf16, device=dev, requires_grad=True)
                inp = x
            for layer in layers:
                x = checkpoint(block, x, gather(layer), hook_for(layer), use_reentrant=False)
            outputs.append(x)
            inflight[i] = (inp, x)

        def backward(i):
            inp, out = inflight.pop(i)
            out.backward(grad_recv[i].normal_())
            del inp

        order = ["F"] * min(m, a.pp - a.rank)
        nf = len(order)
        nb = 0
        while nf < m:
            order += ["B", "F"]
            nf += 1
            nb += 1
        order += ["B"] * (m - nb)
        f = b = 0
        for kind in order:
            if kind == "F":
                forward(f)
                f += 1
            else:
                backward(b)
                b += 1
        # run_post_backward: each unit's reduce-scatter input, its shard written into the sharded
        # gradient (the reduce-scatter's output), the gathered weights freed (resharded).
        master.grad = torch.empty_like(master)
        at = 0
        for unit in ([embedding] if first else []) + layers:
            for name in list(unit["acc"]):
                rs_input = unit["acc"].pop(name).clone()
                n = min((rs_input.numel() + a.dp - 1) // a.dp, shard - at)
                master.grad[at:at + n].copy_(rs_input.flatten()[:n])
                at += n
                del rs_input
            unit["w"] = None
        outputs.clear()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del grad_recv

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize(dev)
    held = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize(dev)
    alloc = torch.cuda.max_memory_allocated(dev)
    reserved = torch.cuda.max_memory_reserved(dev)
    gib = float(1 << 30)
    print(f"allocated_peak_gib: {alloc / gib:.3f}")
    print(f"reserved_peak_gib: {reserved / gib:.3f}")
    print(f"held_gib: {held / gib:.3f}")
    churn = max(1, alloc - held)
    print(f"fragmentation: {(reserved - alloc) / churn:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
