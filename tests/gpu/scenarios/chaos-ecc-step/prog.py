"""Chaos: a small ResNet-like net, fixed shapes, benchmark on, 60 steps with a synchronization
at the end of each (as a job that reads its loss every step does). Under chaos-ecc-step's fault
plan the 20th synchronization reports an uncorrectable ECC error and every later call fails."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = C.SmallResNet(width=64).to(dev)
opt = C.make_opt(model)
x = torch.randn(32, 3, 64, 64, device=dev)
y = C.labels(32, dev)
t0 = time.time()
steps = 60
for step in range(steps):
    loss = C.train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    if step % 10 == 0:
        C.log("step", step, "loss", float(loss))
C.finish(dev, t0, steps, loss)
