"""Train at batch 32; every 20 steps evaluate (model.eval(), torch.no_grad()) at batch 128."""
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
t0 = time.time()
steps = 100
for step in range(steps):
    model.train()
    x = torch.randn(32, 3, 64, 64, device=dev)
    loss = C.train_step(model, opt, x, C.labels(32, dev))
    if (step + 1) % 20 == 0:
        model.eval()
        with torch.no_grad():
            xe = torch.randn(128, 3, 64, 64, device=dev)
            acc = (model(xe).argmax(1) == C.labels(128, dev)).float().mean()
        C.log("step", step + 1, "loss", float(loss), "eval acc", float(acc))
C.finish(dev, t0, steps, loss)
