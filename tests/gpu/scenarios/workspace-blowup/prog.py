"""A real workspace blowup: a DCGAN-style generator layer (ConvTranspose2d 512->256, kernel 4,
stride 2, on 4x4 inputs, fp32, batch 64) trained with cudnn.benchmark on. Measured on the H200
(corpus run 1, pytorch/examples dcgan): the search for its data-gradient problem allocates about
2.5 GiB of workspace for tensors of about 14 MiB. run.sh caps memory at 8 GiB (a card of that
size), where that search takes a third of the memory."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = nn.Sequential(
    nn.ConvTranspose2d(100, 512, 4, 1, 0, bias=False), nn.BatchNorm2d(512), nn.ReLU(True),
    nn.ConvTranspose2d(512, 256, 4, 2, 1, bias=False), nn.BatchNorm2d(256), nn.ReLU(True),
    nn.ConvTranspose2d(256, 3, 4, 2, 1, bias=False), nn.Tanh(),
).to(dev)
opt = C.make_opt(model)
t0 = time.time()
steps = 20
loss = None
for step in range(steps):
    z = torch.randn(64, 100, 1, 1, device=dev)
    opt.zero_grad(set_to_none=True)
    out = model(z)
    loss = out.float().pow(2).mean()
    loss.backward()
    opt.step()
C.log("max reserved %.2f GiB" % (torch.cuda.max_memory_reserved() / 2**30))
C.finish(dev, t0, steps, loss)
