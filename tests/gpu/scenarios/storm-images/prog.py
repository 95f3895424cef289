"""Unbounded 2-D image sizes with cudnn.benchmark on: every step a new (H, W) from a wide range."""
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
model = C.Net2d(width=32).to(dev)
opt = C.make_opt(model)
rng = random.Random(7)
t0 = time.time()
steps = 30
for step in range(steps):
    h = rng.randrange(64, 384, 4)
    w = rng.randrange(64, 384, 4)
    x = torch.randn(16, 3, h, w, device=dev)
    loss = C.train_step(model, opt, x, C.labels(16, dev))
    if step % 10 == 0:
        C.log("step", step, "size", h, w, "loss", float(loss))
C.finish(dev, t0, steps, loss)
