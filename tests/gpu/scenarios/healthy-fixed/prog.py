"""Healthy job: fixed shapes, small ResNet-like net, bf16 autocast, benchmark on, 100 steps."""
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
model = C.SmallResNet(width=64).to(dev)
opt = C.make_opt(model)
x = torch.randn(32, 3, 64, 64, device=dev)
y = C.labels(32, dev)
t0 = time.time()
steps = 100
for step in range(steps):
    loss = C.train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)
    if step % 25 == 0:
        C.log("step", step, "loss", float(loss))
C.finish(dev, t0, steps, loss)
