"""A training job that runs past its trace limit and dies of an out-of-memory error at its end
(issue 15's flight-recorder validation). ResNet-18 (torchvision, random weights) trains STEPS
steps on random 64x64 images with cudnn.benchmark on and prints the median step time of its
second half; then an evaluation loop keeps every output batch in a list (the classic leak),
each step holding 1 GiB more, until the device is full and torch.OutOfMemoryError ends the
process (exit 1). Usage: long_oom.py [STEPS] [BATCH]
With NVTX_STEPS=A:B in the environment, steps A to B-1 run inside an NVTX range named
"cuprobe-steps" (torch.cuda.nvtx.range_push/range_pop), and the script prints "NVTX_STEPS A B"."""
import os
import statistics
import sys
import time

import torch
import torchvision

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 800
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 32
torch.backends.cudnn.benchmark = True
model = torchvision.models.resnet18(num_classes=100).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(batch, 3, 64, 64, device="cuda")
y = torch.randint(0, 100, (batch,), device="cuda")
times = []
nvtx_from, nvtx_to = (int(v) for v in os.environ.get("NVTX_STEPS", "-1:-1").split(":"))
if nvtx_from >= 0:
    print(f"NVTX_STEPS {nvtx_from} {nvtx_to}", flush=True)
for step in range(steps):
    if step == nvtx_from:
        torch.cuda.nvtx.range_push("cuprobe-steps")
    if step == nvtx_to:
        torch.cuda.nvtx.range_pop()
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
print(f"STEP_MS median of the second half: {statistics.median(times[steps // 2:]) * 1e3:.3f}", flush=True)

kept = []  # the leak: every batch's output kept "for later"
with torch.no_grad():
    while True:
        kept.append(torch.empty(1 << 28, dtype=torch.float32, device="cuda"))  # 1 GiB per step
