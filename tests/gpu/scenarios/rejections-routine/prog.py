"""Benchmark on, convolutions with odd channel counts, groups and dilation: searches see routine
rejections (cuDNN's own, and a few injected by run.sh's fault plan) and still find an engine."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402



class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 27, 3, padding=2, dilation=2)
        self.c2 = nn.Conv2d(27, 27, 3, padding=1, groups=3)
        self.c3 = nn.Conv2d(27, 13, 5, padding=2)
        self.head = nn.Linear(13, 10)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.relu(self.c2(x))
        x = F.relu(self.c3(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


dev = C.setup(benchmark=True)
model = Odd().to(dev)
opt = C.make_opt(model)
x = torch.randn(64, 3, 48, 48, device=dev)
y = C.labels(64, dev)
t0 = time.time()
steps = 40
for step in range(steps):
    loss = C.train_step(model, opt, x, y)
C.finish(dev, t0, steps, loss)
