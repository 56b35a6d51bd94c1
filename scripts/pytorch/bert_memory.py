#!/usr/bin/env python3
"""Measure what Hugging Face's single-GPU guide printed for BERT-large (the hf-bert-large-v100-*
rows of data/reference/memory/measured-peak-memory.yaml) with the allocator's own statistics
beside it: torch.cuda.max_memory_allocated (what clustersim's memory.peak_bytes_max predicts),
max_memory_reserved (memory.peak_reserved_bytes_max) and the device's used memory
(memory.device_bytes_max: reserved plus the CUDA context). The rows print only the last; the
gap between the first two is the caching allocator's share, which clustersim leaves at its
segment floor (framework.allocator_fragmentation 0) and no document gives.

The model is bert-large-uncased's shape with a 2-label classification head, written op for op
as transformers' BertForSequenceClassification runs it eagerly (separate query, key and value
linears, matmul, division by sqrt(d), the additive mask, softmax, dropout, matmul; post-norm
blocks; GeLU; the pooler on the first token), randomly initialised (no download), AdamW with
fp32 states, zero_grad keeping the gradients (the Trainer of the guide's date), steps of
`--batch` x `--accumulate` samples of `--seq` random tokens, `--fp16` as torch.autocast with a
GradScaler, `--checkpointing` as torch.utils.checkpoint per layer. The peaks are over the
whole run, as nvidia-smi after trainer.train() saw them.

Usage: bert_memory.py [--batch 4] [--accumulate 1] [--fp16] [--checkpointing] [--steps 8]
           [--layers 24] [--hidden 1024] [--heads 16] [--ffn 4096] [--seq 512] [--vocab 30522]
           [--device cuda:0]
Exit codes: 0 measured; 2 bad arguments; 3 no CUDA GPU (or no PyTorch with CUDA).
"""

import argparse
import math
import sys


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--checkpointing", action="store_true")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--ffn", type=int, default=4096)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--device", default="cuda:0")
    a = p.parse_args()
    if min(a.batch, a.accumulate, a.steps, a.layers, a.hidden, a.heads, a.ffn, a.seq,
           a.vocab) < 1:
        p.error("sizes must be positive")
    if a.hidden % a.heads:
        p.error("hidden must divide by heads")
    return a


def build(torch, a):
    nn = torch.nn
    F = torch.nn.functional
    d = a.hidden // a.heads

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(a.hidden, a.hidden)
            self.key = nn.Linear(a.hidden, a.hidden)
            self.value = nn.Linear(a.hidden, a.hidden)
            self.attn_dense = nn.Linear(a.hidden, a.hidden)
            self.ln1 = nn.LayerNorm(a.hidden, eps=1e-12)
            self.intermediate = nn.Linear(a.hidden, a.ffn)
            self.output = nn.Linear(a.ffn, a.hidden)
            self.ln2 = nn.LayerNorm(a.hidden, eps=1e-12)
            self.drop = nn.Dropout(0.1)

        def heads(self, x):
            b, s, _ = x.shape
            return x.view(b, s, a.heads, d).permute(0, 2, 1, 3)

        def forward(self, x, mask):
            q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + mask
            probs = self.drop(F.softmax(scores, dim=-1))
            ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
            ctx = ctx.view(x.shape)
            x = self.ln1(self.drop(self.attn_dense(ctx)) + x)
            y = self.output(F.gelu(self.intermediate(x)))
            return self.ln2(self.drop(y) + x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(a.vocab, a.hidden)
            self.positions = nn.Embedding(a.seq, a.hidden)
            self.types = nn.Embedding(2, a.hidden)
            self.ln = nn.LayerNorm(a.hidden, eps=1e-12)
            self.drop = nn.Dropout(0.1)
            self.layers = nn.ModuleList(Layer() for _ in range(a.layers))
            self.pooler = nn.Linear(a.hidden, a.hidden)
            self.classifier = nn.Linear(a.hidden, 2)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.words(ids) + self.types(torch.zeros_like(ids)) + self.positions(pos)
            x = self.drop(self.ln(x))
            # BertModel's extended mask: (1 - mask) * -10000 in the parameters' dtype.
            mask = torch.zeros(ids.shape[0], 1, 1, ids.shape[1], device=ids.device)
            for layer in self.layers:
                if a.checkpointing:
                    x = torch.utils.checkpoint.checkpoint(layer, x, mask)
                else:
                    x = layer(x, mask)
            pooled = torch.tanh(self.pooler(x[:, 0]))
            return self.classifier(self.drop(pooled))

    return Model()


def main():
    a = parse()
    try:
        import torch
    except ImportError:
        print("bert_memory: no PyTorch", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("bert_memory: no CUDA GPU", file=sys.stderr)
        return 3
    dev = torch.device(a.device)
    torch.cuda.set_device(dev)
    torch.ones((1, 1), device=dev)
    free, total = torch.cuda.mem_get_info()
    context = total - free - torch.cuda.memory_reserved()
    model = build(torch, a).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    scaler = torch.cuda.amp.GradScaler(enabled=a.fp16)
    ids = torch.randint(100, a.vocab, (a.batch, a.seq), device=dev)
    labels = torch.zeros(a.batch, dtype=torch.long, device=dev)
    model.zero_grad()
    for _ in range(a.steps):
        for _ in range(a.accumulate):
            with torch.autocast("cuda", dtype=torch.float16, enabled=a.fp16):
                loss = torch.nn.functional.cross_entropy(model(ids), labels) / a.accumulate
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        model.zero_grad(set_to_none=False)
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    print(f"gpu: {torch.cuda.get_device_name(dev)!r}")
    print(f"torch: {torch.__version__!r}")
    print(f"parameters: {sum(p.numel() for p in model.parameters())}")
    print(f"context_bytes: {context}")
    print(f"held_bytes: {torch.cuda.memory_allocated()}")
    print(f"max_memory_allocated: {torch.cuda.max_memory_allocated()}")
    print(f"max_memory_reserved: {torch.cuda.max_memory_reserved()}")
    print(f"device_used_bytes: {total - free}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
