"""A decoder-style transformer's training steps, for issue 33's GPU validation.

Linear layers with biases on 2-D activations (PyTorch runs those through cuBLASLt: addmm with a
bias is gemm_and_bias), attention through F.scaled_dot_product_attention (cuDNN's fused attention
where PyTorch picks it, or the backend --sdpa names), bf16 autocast, AdamW.

  --lengths fixed:N       every step at sequence length N (the overhead A/B)
  --lengths buckets:A,B.. each step one of a few lengths, in turn (a bucketed data loader)
  --lengths random:LO,HI  each step a new length drawn from LO..HI in steps of 8 (dynamic lengths:
                          every new length is a new cuDNN attention graph to build)
  --blas lt               torch.backends.cuda.preferred_blas_library("cublaslt"): every matmul
                          through cuBLASLt
  --sdpa cudnn|flash|efficient|math|default
  --fault-probe           see what PyTorch does when cuDNN refuses an attention graph: run one
                          SDPA call with every backend allowed, then one restricted to cuDNN,
                          printing "fallback-probe ..." lines (run under a fault rule that fails
                          the attention graph's finalizes)

Prints the backend PyTorch used, "step I len L ms T" per step, and a final line
"median_step_ms M first_step_ms F steps N" (the first step excluded from the median).
"""
import argparse
import random
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "cudnn": [SDPBackend.CUDNN_ATTENTION],
    "flash": [SDPBackend.FLASH_ATTENTION],
    "efficient": [SDPBackend.EFFICIENT_ATTENTION],
    "math": [SDPBackend.MATH],
}


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x).reshape(b * s, d)  # 2-D: addmm with a bias (cuBLASLt)
        q, k, v = self.qkv(h).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b * s, d)).reshape(b, s, d)
        h = self.ln2(x).reshape(b * s, d)
        return x + self.fc2(F.gelu(self.fc1(h))).reshape(b, s, d)


def lengths(spec, steps, seed):
    kind, _, arg = spec.partition(":")
    if kind == "fixed":
        return [int(arg)] * steps
    if kind == "buckets":
        values = [int(x) for x in arg.split(",")]
        return [values[i % len(values)] for i in range(steps)]
    if kind == "random":
        lo, hi = (int(x) for x in arg.split(","))
        rng = random.Random(seed)
        return [rng.randrange(lo, hi + 1, 8) for _ in range(steps)]
    sys.exit(f"--lengths {spec}: expected fixed:N, buckets:A,B,... or random:LO,HI")


def fault_probe():
    q = torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.bfloat16)
    for name, backends in (("default", None), ("cudnn-only", BACKENDS["cudnn"])):
        try:
            if backends is None:
                out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
            else:
                with sdpa_kernel(backends):
                    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
            torch.cuda.synchronize()
            print(f"fallback-probe {name} ok sum={out.float().sum().item():.4f}", flush=True)
        except Exception as e:  # what PyTorch raises is the finding
            print(f"fallback-probe {name} raised {type(e).__name__}: {str(e)[:300]!r}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lengths", default="fixed:512")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--blas", default="default", choices=["default", "lt"])
    ap.add_argument("--sdpa", default="default", choices=["default", *BACKENDS])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fault-probe", action="store_true")
    a = ap.parse_args()
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0),
          flush=True)
    if a.fault_probe:
        fault_probe()
        return
    if a.blas == "lt":
        torch.backends.cuda.preferred_blas_library("cublaslt")
    torch.manual_seed(a.seed)
    model = nn.Sequential(*[Block(a.dim, a.heads) for _ in range(a.layers)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    times = []
    ctx = sdpa_kernel(BACKENDS[a.sdpa]) if a.sdpa != "default" else None
    if ctx:
        ctx.__enter__()
    for i, s in enumerate(lengths(a.lengths, a.steps, a.seed)):
        x = torch.randn(a.batch, s, a.dim, device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        times.append(ms)
        print(f"step {i} len {s} ms {ms:.2f}", flush=True)
    if ctx:
        ctx.__exit__(None, None, None)
    rest = times[1:] or times
    print(f"median_step_ms {statistics.median(rest):.3f} first_step_ms {times[0]:.1f} steps {len(times)}", flush=True)


if __name__ == "__main__":
    main()
