"""1-D convolutions (Conv1d stack) on random audio lengths with cudnn.benchmark on."""
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
rng = random.Random(11)
t0 = time.time()
steps = 30
for step in range(steps):
    n = rng.randrange(4000, 64000)
    x = torch.randn(16, 1, n, device=dev)
    loss = C.train_step(model, opt, x, C.labels(16, dev))
    if step % 10 == 0:
        C.log("step", step, "length", n, "loss", float(loss))
C.finish(dev, t0, steps, loss)
