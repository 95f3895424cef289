"""A few training steps, then a request for far more memory than the GPU has; not caught."""
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
model = C.Net2d(width=32).to(dev)
opt = C.make_opt(model)
for step in range(5):
    loss = C.train_step(model, opt, torch.randn(32, 3, 64, 64, device=dev), C.labels(32, dev))
C.log("trained 5 steps, loss", float(loss), "; now asking for 400 GiB")
big = torch.empty(400 * 2**30, dtype=torch.uint8, device=dev)  # raises torch.OutOfMemoryError
C.log("result: unexpectedly got", big.numel(), "bytes")
