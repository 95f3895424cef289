"""DataLoader over a TensorDataset of 1000 samples, batch 64, drop_last=False: the last batch of
every epoch has 40 samples. 5 epochs."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

dev = C.setup(benchmark=True)
xs = torch.randn(1000, 3, 32, 32)
ys = torch.randint(0, 10, (1000,))
loader = DataLoader(TensorDataset(xs, ys), batch_size=64, shuffle=True, drop_last=False)
model = C.Net2d(width=32).to(dev)
opt = C.make_opt(model)
t0 = time.time()
steps = 0
for epoch in range(5):
    for x, y in loader:
        loss = C.train_step(model, opt, x.to(dev, non_blocking=True), y.to(dev, non_blocking=True))
        steps += 1
    C.log("epoch", epoch, "last batch", x.shape[0], "loss", float(loss))
C.finish(dev, t0, steps, loss)
