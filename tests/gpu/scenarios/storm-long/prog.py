"""A storm that lasts: a random (H, W) in 64..512 every step, benchmark on, for 45 seconds of
training (long enough for the shim's live alert, CUPROBE_ALERTS_STORM_S = 20 s by default)."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = C.Net2d(width=32).to(dev)
opt = C.make_opt(model)
rng = random.Random(5)
t0 = time.time()
step = 0
loss = None
while time.time() - t0 < 45 and step < 400:
    h, w = rng.randrange(64, 512, 4), rng.randrange(64, 512, 4)
    loss = C.train_step(model, opt, torch.randn(16, 3, h, w, device=dev), C.labels(16, dev))
    if step % 10 == 0:
        C.log("step", step, "size", h, w, "loss %.4f" % float(loss))
    step += 1
C.finish(dev, t0, step, loss)
