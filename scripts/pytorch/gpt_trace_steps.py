#!/usr/bin/env python3
"""Record PyTorch profiler traces of GPT-style training steps on one GPU, for
`clustersim calibrate import` (calibrate/kineto.h) and `clustersim run --compare`.

The model is plain PyTorch, written to match clustersim's transformer (strategies/models/
model_spec.h defaults; GPT-2 / Megatron-LM's GPT): learned position embeddings, pre-LayerNorm
blocks of causal self-attention and a GeLU MLP (ffn = 4 hidden), biases, dropout 0.1, the
final LayerNorm, an LM head tied to the word embeddings and the cross-entropy loss, AdamW.
Every layer's forward runs inside `record_function("layerN")`, which names the layer of its
kernels (the backward's are found through autograd's sequence numbers).

Variants, as PyTorch offers them:
- attention `flash`: torch.nn.functional.scaled_dot_product_attention restricted to the flash
  backend; `unfused`: QK^T (baddbmm), the causal mask, softmax, dropout and attention over V
  (bmm) as separate kernels;
- layer norm `fused`: torch.nn.functional.layer_norm (one kernel each way); `unfused`: mean,
  variance, normalise, scale and shift as separate elementwise kernels;
- dtype bf16 or fp16 (parameters and activations in that type, as a step-time measurement;
  the optimizer keeps no fp32 master copy).

Each configuration: `--wait` + `--warmup` untraced steps, then `--active` traced steps
(torch.profiler.schedule), with activities CPU and CUDA and record_shapes=True; the trace is
written gzip-compressed as NAME.json.gz, and a line per configuration to the manifest
(`--out DIR/manifest.jsonl`: the file, the model settings as `clustersim --set` words, the
median step time from CUDA events). A configuration that does not fit in memory is skipped
and said so. `--budget-s` stops starting new configurations after that many seconds.

Usage: gpt_trace_steps.py --out DIR [--grid default|small|CONFIG...] [--layers 2]
                          [--budget-s 420] [--device cuda:0]
  CONFIG: hidden:heads:micro_batch:seq:dtype:attention:layernorm, e.g. 2048:16:2:4096:bf16:flash:fused
Exit codes: 0 at least one trace written; 2 bad arguments; 3 no CUDA GPU (or no PyTorch
with CUDA); 1 nothing could be traced.
"""

import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import time

VOCAB = 50257  # GPT-2's tokenizer; clustersim pads it as Megatron does (multiple of 128)

# A spread over the ranges (hidden 1024-8192, micro-batch 1-8, sequence 2048-8192,
# bf16 and fp16, flash and unfused attention, fused and unfused layer norm), ordered so that
# a short budget still covers every variant. The shapes are split for fitting and
# validation by shape (calibrate split --by-shape), not here.
DEFAULT_GRID = [
    "1024:16:1:2048:bf16:flash:fused",
    "2048:16:2:2048:bf16:unfused:fused",
    "4096:32:1:4096:bf16:flash:unfused",
    "1024:16:8:2048:fp16:flash:fused",
    "2048:16:4:4096:fp16:unfused:unfused",
    "8192:64:1:2048:bf16:flash:fused",
    "4096:32:2:2048:fp16:flash:fused",
    "1024:16:2:8192:bf16:flash:fused",
    "2048:16:1:8192:bf16:unfused:fused",
    "4096:32:4:2048:bf16:unfused:fused",
    "8192:64:1:4096:fp16:flash:unfused",
    "1024:16:4:4096:bf16:unfused:unfused",
    "2048:16:8:2048:bf16:flash:unfused",
    "4096:32:1:8192:bf16:flash:fused",
    "8192:64:2:2048:bf16:unfused:fused",
    "2048:16:2:4096:fp16:flash:fused",
]
SMALL_GRID = DEFAULT_GRID[:4]


def parse_config(text):
    parts = text.split(":")
    if len(parts) != 7:
        raise ValueError(f"config '{text}': expected hidden:heads:micro_batch:seq:dtype:attention:"
                         "layernorm")
    hidden, heads, mb, seq = (int(p) for p in parts[:4])
    dtype, attention, layernorm = parts[4:]
    if dtype not in ("bf16", "fp16") or attention not in ("flash", "unfused") or \
            layernorm not in ("fused", "unfused") or hidden % heads != 0 or \
            min(hidden, heads, mb, seq) <= 0:
        raise ValueError(f"config '{text}': bad value")
    return dict(hidden=hidden, heads=heads, micro_batch=mb, seq=seq, dtype=dtype,
                attention=attention, layernorm=layernorm)


def build(torch, cfg, layers, device):
    nn = torch.nn
    F = torch.nn.functional
    h, a, s = cfg["hidden"], cfg["heads"], cfg["seq"]
    p_drop = 0.1

    def flash_only():
        """SDPA restricted to the flash backend (an error, not a silent fallback, without it)."""
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel  # PyTorch 2.3 and later
            return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
        except ImportError:
            return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                                  enable_mem_efficient=False)

    def layer_norm(x, ln):
        if cfg["layernorm"] == "fused":
            return F.layer_norm(x, (h,), ln.weight, ln.bias, ln.eps)
        mean = x.mean(-1, keepdim=True)
        var = (x - mean).pow(2).mean(-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + ln.eps) * ln.weight + ln.bias

    class Block(nn.Module):
        def __init__(self, index):
            super().__init__()
            self.index = index
            self.ln1 = nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h)
            self.proj = nn.Linear(h, h)
            self.ln2 = nn.LayerNorm(h)
            self.fc1 = nn.Linear(h, 4 * h)
            self.fc2 = nn.Linear(4 * h, h)

        def attention(self, x):
            b = x.shape[0]
            q, k, v = self.qkv(x).view(b, s, 3, a, h // a).permute(2, 0, 3, 1, 4)
            if cfg["attention"] == "flash":
                with flash_only():
                    y = F.scaled_dot_product_attention(q, k, v, dropout_p=p_drop, is_causal=True)
            else:
                qb = q.reshape(b * a, s, h // a)
                kb = k.reshape(b * a, s, h // a)
                vb = v.reshape(b * a, s, h // a)
                scores = torch.baddbmm(self.mask_bias(qb), qb, kb.transpose(1, 2),
                                       beta=1.0, alpha=1.0 / math.sqrt(h // a))
                probs = F.dropout(torch.softmax(scores, dim=-1), p_drop, self.training)
                y = torch.bmm(probs, vb).view(b, a, s, h // a)
            y = y.transpose(1, 2).reshape(b, s, h)
            return F.dropout(self.proj(y), p_drop, self.training)

        def mask_bias(self, qb):
            if not hasattr(self, "_mask"):
                m = torch.full((s, s), float("-inf"), device=qb.device, dtype=qb.dtype)
                self._mask = torch.triu(m, diagonal=1).unsqueeze(0)
            return self._mask.expand(qb.shape[0], s, s)

        def forward(self, x):
            with torch.profiler.record_function(f"layer{self.index}"):
                x = x + self.attention(layer_norm(x, self.ln1))
                y = self.fc2(F.gelu(self.fc1(layer_norm(x, self.ln2))))
                return x + F.dropout(y, p_drop, self.training)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, h)
            self.wpe = nn.Embedding(s, h)
            self.blocks = nn.ModuleList(Block(i) for i in range(layers))
            self.ln_f = nn.LayerNorm(h)

        def forward(self, tokens, targets):
            with torch.profiler.record_function("embedding"):
                pos = torch.arange(s, device=tokens.device)
                x = F.dropout(self.wte(tokens) + self.wpe(pos), p_drop, self.training)
            for blk in self.blocks:
                x = blk(x)
            with torch.profiler.record_function("head"):
                logits = F.linear(layer_norm(x, self.ln_f), self.wte.weight)  # tied
                return F.cross_entropy(logits.view(-1, VOCAB).float(), targets.view(-1))

    dtype = torch.bfloat16 if cfg["dtype"] == "bf16" else torch.float16
    model = GPT().to(device=device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    return model, opt


def run_config(torch, cfg, layers, out_dir, args):
    device = torch.device(args.device)
    name = "gpt-h{hidden}-a{heads}-b{micro_batch}-s{seq}-{dtype}-{attention}-ln{layernorm}".format(
        **cfg) + f"-l{layers}"
    model, opt = build(torch, cfg, layers, device)
    tokens = torch.randint(0, VOCAB, (cfg["micro_batch"], cfg["seq"]), device=device)
    targets = torch.randint(0, VOCAB, (cfg["micro_batch"], cfg["seq"]), device=device)

    def step():
        loss = model(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times = []
    from torch.profiler import ProfilerActivity, profile, schedule
    sched = schedule(wait=args.wait, warmup=args.warmup, active=args.active, repeat=1)
    plain = os.path.join(out_dir, name + ".json")

    def export(p):
        p.export_chrome_trace(plain)

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=sched, on_trace_ready=export) as prof:
        for _ in range(args.wait + args.warmup + args.active):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
            prof.step()
    with open(plain, "rb") as f_in, gzip.open(plain + ".gz", "wb", compresslevel=6) as f_out:
        shutil.copyfileobj(f_in, f_out)
    os.remove(plain)
    del model, opt
    torch.cuda.empty_cache()
    steady = times[args.wait:]
    settings = [
        "model.kind=transformer", f"model.layers={layers}", f"model.hidden={cfg['hidden']}",
        f"model.heads={cfg['heads']}", f"model.ffn={4 * cfg['hidden']}",
        f"model.seq={cfg['seq']}", f"model.vocab={VOCAB}", f"model.attention={cfg['attention']}",
        f"training.micro_batch={cfg['micro_batch']}",
        f"training.global_batch={cfg['micro_batch']}", f"training.dtype={cfg['dtype']}",
        "training.optimizer=adamw", "parallel.tp=1", "parallel.pp=1", "parallel.dp=1",
    ]
    return {
        "trace": name + ".json.gz",
        "config": cfg,
        "layers": layers,
        "layernorm": cfg["layernorm"],
        "set": settings,
        "step_ms_median": statistics.median(steady),
        "step_ms_all": [round(t, 4) for t in times],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory for the traces and manifest.jsonl")
    ap.add_argument("--grid", nargs="+", default=["default"],
                    help="default, small, or CONFIG words")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--wait", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--active", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=420.0)
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()
    try:
        configs = []
        for g in args.grid:
            if g == "default":
                configs += [parse_config(c) for c in DEFAULT_GRID]
            elif g == "small":
                configs += [parse_config(c) for c in SMALL_GRID]
            else:
                configs.append(parse_config(g))
        if args.layers < 1 or args.active < 1 or args.wait < 0 or args.warmup < 0:
            raise ValueError("--layers and --active must be positive")
    except ValueError as e:
        print(f"gpt_trace_steps: {e}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("gpt_trace_steps: PyTorch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("gpt_trace_steps: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 3
    os.makedirs(args.out, exist_ok=True)
    manifest = os.path.join(args.out, "manifest.jsonl")
    t0 = time.monotonic()
    written = 0
    with open(manifest, "a", encoding="utf-8") as mf:
        for cfg in configs:
            if time.monotonic() - t0 > args.budget_s:
                print(f"gpt_trace_steps: budget of {args.budget_s:.0f} s spent; "
                      f"{len(configs) - written} configurations not traced", file=sys.stderr)
                break
            t = time.monotonic()
            try:
                rec = run_config(torch, cfg, args.layers, args.out, args)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                print(f"gpt_trace_steps: {cfg}: out of memory, skipped", file=sys.stderr)
                continue
            except RuntimeError as e:  # e.g. no flash kernel for this GPU / dtype
                torch.cuda.empty_cache()
                print(f"gpt_trace_steps: {cfg}: {str(e).splitlines()[0]}; skipped",
                      file=sys.stderr)
                continue
            rec["device"] = torch.cuda.get_device_name(torch.device(args.device))
            rec["torch"] = torch.__version__
            mf.write(json.dumps(rec, sort_keys=True) + "\n")
            mf.flush()
            written += 1
            print(f"{rec['trace']}: step {rec['step_ms_median']:.3f} ms "
                  f"({time.monotonic() - t:.1f} s)")
    return 0 if written > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
