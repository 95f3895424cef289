"""torch.cuda.empty_cache() every step: the caching allocator gives its blocks back and
cudaMallocs them again on the next step."""
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
model = C.Net2d(width=64).to(dev)
opt = C.make_opt(model)
x = torch.randn(64, 3, 128, 128, device=dev)
y = C.labels(64, dev)
t0 = time.time()
steps = 150
for step in range(steps):
    loss = C.train_step(model, opt, x, y)
    torch.cuda.empty_cache()
    if step % 50 == 0:
        C.log("step", step, "loss", float(loss))
C.finish(dev, t0, steps, loss)
