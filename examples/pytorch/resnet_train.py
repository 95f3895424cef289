"""A torchvision ResNet training loop (BatchNorm through cuDNN's legacy API, convolutions through
the backend API), timing the median step after warm-up. Used by the divergence example (one
process per GPU under torchrun) and to measure cuprobe's added time per step.

Usage: python3 resnet_train.py [--arch resnet18] [--batch 64] [--steps 30] [--warmup 8]
       [--benchmark] [--amp] [--channels-last]
Under torchrun each process uses GPU LOCAL_RANK (modulo the GPUs present)."""
import argparse
import os
import statistics
import time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("--arch", default="resnet18")
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=8)
p.add_argument("--benchmark", action="store_true")
p.add_argument("--amp", action="store_true")
p.add_argument("--channels-last", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
torch.backends.cudnn.benchmark = a.benchmark
rank = int(os.environ.get("RANK", "0"))
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
model = getattr(torchvision.models, a.arch)(num_classes=100).cuda()
fmt = torch.channels_last if a.channels_last else torch.contiguous_format
model = model.to(memory_format=fmt)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(a.batch, 3, 224, 224, device="cuda").to(memory_format=fmt)
y = torch.randint(0, 100, (a.batch,), device="cuda")
times, first = [], 0.0
for step in range(a.warmup + a.steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if step == 0:
        first = time.perf_counter() - t0  # with --benchmark: every convolution's search
    if step >= a.warmup:
        times.append(time.perf_counter() - t0)
print(f"rank {rank} {torch.cuda.get_device_name()} {a.arch} batch {a.batch} first_step_ms {first * 1e3:.0f} median_step_ms {statistics.median(times) * 1e3:.3f} loss {loss.item():.4f}")
