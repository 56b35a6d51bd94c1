#!/usr/bin/env python3
"""Measure the PyTorch caching allocator's fragmentation on a training step of a Llama-style
decoder on one GPU: the framework key `allocator_fragmentation` (strategies/parallel/
framework_spec.h), which no document gives and only a GPU can measure.

The step: `--layers` pre-norm blocks (RMSNorm, grouped-query attention through
scaled_dot_product_attention, SwiGLU MLP) of `--hidden` with `--ffn`, an untied output layer of
`--vocab` and its cross-entropy, bf16 weights with fp32 AdamW states (torch.autocast), optional
full recompute per block (torch.utils.checkpoint). After `--warmup` steps the peaks are reset and
`--steps` steps run; the allocator's peaks (torch.cuda.max_memory_allocated,
max_memory_reserved) give

    allocator_fragmentation = (reserved - allocated) / churn

where churn is the peak minus the memory held across steps (weights, gradients, optimizer
state: torch.cuda.memory_allocated() between steps), the bytes a step allocates and frees,
as clustersim counts it (activations and transients). Prints one YAML line per statistic.

Usage: allocator_fragmentation.py [--layers 8] [--hidden 4096] [--ffn 14336] [--heads 32]
           [--kv-heads 8] [--vocab 128256] [--seq 4096] [--batch 1] [--recompute none|full]
           [--steps 5] [--warmup 3] [--device cuda:0]
Exit codes: 0 measured; 2 bad arguments; 3 no CUDA GPU (or no PyTorch with CUDA).
"""

import argparse
import sys


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--recompute", choices=["none", "full"], default="none")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", default="cuda:0")
    a = p.parse_args()
    if min(a.layers, a.hidden, a.ffn, a.heads, a.kv_heads, a.vocab, a.seq, a.batch) < 1:
        p.error("sizes must be positive")
    if a.hidden % a.heads or a.heads % a.kv_heads:
        p.error("hidden must divide by heads, heads by kv-heads")
    return a


def build(torch, a):
    nn = torch.nn
    F = torch.nn.functional
    head = a.hidden // a.heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1 = nn.RMSNorm(a.hidden)
            self.qkv = nn.Linear(a.hidden, (a.heads + 2 * a.kv_heads) * head, bias=False)
            self.o = nn.Linear(a.hidden, a.hidden, bias=False)
            self.n2 = nn.RMSNorm(a.hidden)
            self.up = nn.Linear(a.hidden, 2 * a.ffn, bias=False)
            self.down = nn.Linear(a.ffn, a.hidden, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).split(
                [a.heads * head, a.kv_heads * head, a.kv_heads * head], dim=-1)
            q = q.view(b, s, a.heads, head).transpose(1, 2)
            k = k.view(b, s, a.kv_heads, head).transpose(1, 2)
            v = v.view(b, s, a.kv_heads, head).transpose(1, 2)
            rep = a.heads // a.kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(y.transpose(1, 2).reshape(b, s, a.hidden))
            g, u = self.up(self.n2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(g) * u)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(a.vocab, a.hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(a.layers))
            self.norm = nn.RMSNorm(a.hidden)
            self.out = nn.Linear(a.hidden, a.vocab, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for blk in self.blocks:
                if a.recompute == "full":
                    x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
                else:
                    x = blk(x)
            return self.out(self.norm(x))

    return Model()


def main():
    a = parse()
    try:
        import torch
    except ImportError:
        print("allocator_fragmentation: no PyTorch", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("allocator_fragmentation: no CUDA GPU", file=sys.stderr)
        return 3
    dev = torch.device(a.device)
    torch.cuda.set_device(dev)
    model = build(torch, a).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, a.vocab), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    allocated = torch.cuda.max_memory_allocated()
    reserved = torch.cuda.max_memory_reserved()
    churn = max(1, allocated - held)
    free, total = torch.cuda.mem_get_info()
    print(f"gpu: {torch.cuda.get_device_name(dev)!r}")
    print(f"torch: {torch.__version__!r}")
    print(f"device_total_bytes: {total}")
    print(f"held_bytes: {held}")
    print(f"max_memory_allocated: {allocated}")
    print(f"max_memory_reserved: {reserved}")
    print(f"device_used_bytes: {total - free}")
    print(f"allocator_fragmentation: {(reserved - allocated) / churn:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
