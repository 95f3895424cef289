"""2-D conv model on 8 fixed image sizes: each seen once in the first 8 steps, then drawn at random."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

SIZES = [(64, 64), (96, 96), (128, 128), (160, 160), (192, 192), (224, 224), (96, 160), (160, 96)]
dev = C.setup(benchmark=True)
model = C.Net2d(width=32).to(dev)
opt = C.make_opt(model)
rng = random.Random(17)
t0 = time.time()
steps = 150
for step in range(steps):
    h, w = SIZES[step] if step < len(SIZES) else rng.choice(SIZES)
    x = torch.randn(16, 3, h, w, device=dev)
    loss = C.train_step(model, opt, x, C.labels(16, dev))
    if step % 50 == 0:
        C.log("step", step, "size", h, w, "loss", float(loss))
C.finish(dev, t0, steps, loss)
