"""Scaled dot-product attention through cuDNN (issue 33's probe and validation program).

Runs torch.nn.functional.scaled_dot_product_attention restricted to the cuDNN backend
(torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)) forward and backward, in bf16, for
each of a few configurations: causal or not, dropout or not, an additive mask, several sequence
lengths (the usual dynamic dimension), and GQA-shaped heads; then a small transformer encoder's
training steps whose sequence length changes every step. Prints one line per configuration
("sdpa ... ok" or "sdpa ... failed: <why>"), so that what PyTorch did is on record beside what
cuprobe saw. Usage: python3 sdpa_probe.py [--steps N] [--lengths 128,256,...]
"""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def attention(b, h, s, d, causal, dropout, mask, hk=None):
    dev = "cuda"
    q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, hk or h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, hk or h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    m = torch.randn(b, 1, s, s, device=dev, dtype=torch.bfloat16) if mask else None
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=dropout, is_causal=causal,
                                             enable_gqa=hk is not None)
        out.float().sum().backward()
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--lengths", default="128,256,384")
    ap.add_argument("--train", type=int, default=1, help="run the transformer training steps (1) or not (0)")
    a = ap.parse_args()
    log("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0))
    lengths = [int(x) for x in a.lengths.split(",")]
    configs = []
    for s in lengths:
        configs.append(dict(s=s, causal=False, dropout=0.0, mask=False))
        configs.append(dict(s=s, causal=True, dropout=0.0, mask=False))
    configs.append(dict(s=lengths[0], causal=False, dropout=0.1, mask=False))
    configs.append(dict(s=lengths[0], causal=False, dropout=0.0, mask=True))
    configs.append(dict(s=lengths[0], causal=True, dropout=0.0, mask=False, hk=2))
    failed = 0
    for c in configs:
        name = "sdpa b=2 h=8 d=64 " + " ".join("%s=%s" % kv for kv in c.items())
        try:
            for _ in range(2):
                attention(2, 8, c["s"], 64, c["causal"], c["dropout"], c["mask"], c.get("hk"))
            log(name, "ok")
        except Exception as e:  # PyTorch refuses configurations cuDNN's attention does not take
            failed += 1
            log(name, "failed:", type(e).__name__, str(e).splitlines()[0][:200])
    if a.train:
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True, norm_first=True)
        model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).cuda().to(torch.bfloat16)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        start = time.time()
        for step in range(a.steps):
            s = lengths[step % len(lengths)]
            x = torch.randn(4, s, 512, device="cuda", dtype=torch.bfloat16)
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                loss = model(x, is_causal=False).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        log("transformer steps", a.steps, "in %.2f s" % (time.time() - start))
    log("done, %d configurations failed" % failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
