"""Starts with a batch far too large, catches torch.OutOfMemoryError, halves the batch, goes on."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402



class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 32, 3, padding=1)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.c2(F.relu(self.c1(x))))
        return self.head(x.mean(dim=(2, 3)))


dev = C.setup(benchmark=False)
model = Wide().to(dev)
opt = C.make_opt(model)
batch = 131072  # 2 MiB of activation per sample per layer at 128x128x32 fp32: ~256 GiB per layer
done = 0
ooms = 0
t0 = time.time()
while done < 5 and batch >= 64:
    failed = False
    try:
        x = torch.randn(batch, 3, 128, 128, device=dev)
        loss = C.train_step(model, opt, x, C.labels(batch, dev))
        float(loss)
        done += 1
    except torch.OutOfMemoryError as e:
        failed = True
        C.log("OOM at batch", batch, ":", str(e).splitlines()[0][:160])
    x = None
    loss_ok = not failed
    if failed:
        ooms += 1
        opt.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()
        batch //= 2
C.log("result: %d steps at batch %d after %d out-of-memory errors" % (done, batch, ooms))
C.finish(dev, t0, done)
