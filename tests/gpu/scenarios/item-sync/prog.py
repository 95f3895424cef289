"""GPU-heavy steps (large fp32 matmuls) with torch.cuda.synchronize(), loss.item() and a host-side
NaN check every step:
the host waits for the device every iteration."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=False)
n = 8192
w = torch.randn(n, n, device=dev) / n ** 0.5
x = torch.randn(n, n, device=dev)
t0 = time.time()
steps = 40
for step in range(steps):
    h = x
    for _ in range(6):
        h = torch.tanh(h @ w)
    loss = h.float().pow(2).mean()
    torch.cuda.synchronize()  # per-step timing / host-side check: waits for the device
    v = loss.item()
    if v != v:
        raise SystemExit("NaN loss")
    if step % 10 == 0:
        C.log("step", step, "loss", v)
C.finish(dev, t0, steps, v)
