"""A convolution every cuDNN plan of which fails (run.sh injects NOT_SUPPORTED into each execution
of its forward problem): PyTorch raises 'unable to find an engine'; the program catches it."""
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
x = torch.randn(64, 3, 32, 32, device=dev)
y = C.labels(64, dev)
try:
    for step in range(5):
        loss = C.train_step(model, opt, x, y)
    C.log("result: no error (the fault plan did not match)")
except RuntimeError as e:
    C.log("caught RuntimeError:", str(e).splitlines()[0][:300])
    C.log("result: the application saw the cuDNN failure")
