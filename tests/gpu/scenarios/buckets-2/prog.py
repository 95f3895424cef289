"""1-D conv model whose input lengths alternate between two fixed buckets (8000, 16000)."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = C.Net1d(cin=1, width=32).to(dev)
opt = C.make_opt(model)
t0 = time.time()
steps = 60
for step in range(steps):
    n = 8000 if step % 2 == 0 else 16000
    x = torch.randn(16, 1, n, device=dev)
    loss = C.train_step(model, opt, x, C.labels(16, dev))
    if step % 20 == 0:
        C.log("step", step, "length", n, "loss", float(loss))
C.finish(dev, t0, steps, loss)
