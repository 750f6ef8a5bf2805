#!/usr/bin/env python3
"""Times Llama transformer blocks forward + backward on one GPU, compiled per block as torchtitan
compiles them, in bf16 and with torchao's float8 recipes (convert_to_float8_training): the
block-level speed-up of float8 that shardsim predicts from its GEMM rates and cast bytes
(docs/float8.md). Not part of CI: it needs PyTorch, torchao and a GPU with float8 (sm_89+).

    python3 validation/torch/float8_block.py --out block.json [--layers 2] [--seq 8192] [--profile DIR]

The JSON holds, per variant (bf16, tensorwise, rowwise), the milliseconds of one block's forward
and backward (the mean over --iters steps after --warmup, CUDA events around the whole step,
divided by the layers) and the tokens per step. `shardsim` predicts the same with
validation/scenarios/llama_block_h200.yaml (validation/gpu_check.sh compares the two).
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rotary_tables(head_dim, seq, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(seq).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)  # complex64 [seq, head_dim / 2]


def apply_rotary(x, freqs):
    # x: [batch, seq, heads, head_dim], rotated in complex pairs (torchtitan's apply_rotary_emb).
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs[None, :, None, :]).flatten(3)
    return out.type_as(x)


class Block(nn.Module):
    """A Llama 3 block: RMSNorm, GQA attention with rotary embeddings (SDPA, causal), RMSNorm,
    SwiGLU feed-forward, residuals; linears without bias."""

    def __init__(self, dim, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.attention_norm = RMSNorm(dim)
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)

    def forward(self, x, freqs):
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q = self.wq(h).view(b, s, self.heads, self.head_dim)
        k = self.wk(h).view(b, s, self.kv_heads, self.head_dim)
        v = self.wv(h).view(b, s, self.kv_heads, self.head_dim)
        q, k = apply_rotary(q, freqs), apply_rotary(k, freqs)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def build(args, recipe):
    torch.manual_seed(0)
    blocks = nn.ModuleList(Block(args.dim, args.heads, args.kv_heads, args.ffn) for _ in range(args.layers))
    blocks = blocks.to(device="cuda", dtype=torch.bfloat16)
    if recipe != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        convert_to_float8_training(blocks, config=Float8LinearConfig.from_recipe_name(recipe))
    # torchtitan compiles each TransformerBlock on its own (apply_compile).
    for i, blk in enumerate(blocks):
        blocks[i] = torch.compile(blk, fullgraph=True)
    return blocks


def time_variant(args, recipe):
    blocks = build(args, recipe)
    freqs = rotary_tables(args.dim // args.heads, args.seq).cuda()
    x = torch.randn(args.batch, args.seq, args.dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn_like(x)

    def step():
        h = x
        for blk in blocks:
            h = blk(h, freqs)
        h.backward(grad)
        for p in blocks.parameters():
            p.grad = None
        x.grad = None

    t0 = time.time()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.iters):
        step()
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / args.iters / args.layers
    result = {"block_ms": ms, "warmup_s": warm_s}
    if args.profile:
        result["kernels"] = profile(args, recipe, step)
    del blocks
    torch.cuda.empty_cache()
    return result


def profile(args, recipe, step):
    """Two steps under torch.profiler: a Chrome trace (`shardsim calibrate` reads its GEMMs and
    attention) and the GPU kernels' time per block by kernel name, largest first."""
    from torch.profiler import ProfilerActivity

    steps = 2
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(f"{args.profile}/trace_{recipe}.json")
    kernels = []
    for e in prof.key_averages():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        total = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        kernels.append({"name": e.key[:160], "count": e.count // steps, "block_ms": total / 1e3 / steps / args.layers})
    kernels.sort(key=lambda k: -k["block_ms"])
    return kernels


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--recipes", default="bf16,tensorwise,rowwise")
    p.add_argument("--attention", choices=["default", "flash", "cudnn"], default="default",
                   help="SDPA's backend: PyTorch's choice, or FlashAttention-2 / cuDNN alone")
    p.add_argument("--profile", metavar="DIR", help="also profile two steps per recipe: DIR/trace_RECIPE.json and kernel times")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("float8_block: no GPU", file=sys.stderr)
        return 2
    if args.attention != "default":
        # Global flags, set before anything compiles: SDPA picks its kernel from them.
        only = args.attention
        torch.backends.cuda.enable_flash_sdp(only == "flash")
        torch.backends.cuda.enable_cudnn_sdp(only == "cudnn")
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_math_sdp(False)
    out = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "shape": {k: getattr(args, k) for k in ("dim", "heads", "kv_heads", "ffn", "layers", "batch", "seq")},
        "tokens": args.batch * args.seq,
        "attention": args.attention,
        "variants": {},
    }
    for recipe in args.recipes.split(","):
        try:
            r = time_variant(args, recipe)
        except Exception as e:  # one recipe failing (a torchao / torch mismatch) leaves the others
            r = {"error": f"{type(e).__name__}: {e}"}
        out["variants"][recipe] = r
        print(f"{recipe:>10}: {dict((k, v) for k, v in r.items() if k != 'kernels')}", flush=True)
        for k in r.get("kernels", [])[:25]:
            print(f"    {k['block_ms']:8.3f} ms  x{k['count']:<4} {k['name']}", flush=True)
    base = out["variants"].get("bf16", {}).get("block_ms")
    for recipe, r in out["variants"].items():
        if base and "block_ms" in r:
            r["speedup"] = base / r["block_ms"]
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
