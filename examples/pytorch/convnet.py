"""A small convolutional network trained with torch.backends.cudnn.benchmark on, either on
images whose size changes from step to step (--sizes random: every new size makes cuDNN time
all its candidate plans again) or on one fixed size (--sizes fixed: searches happen once, in the
first step). Prints the mean step time, the slowest step and the number of distinct sizes. Steps
are not synchronized one by one (as in a real training loop); a step's time is the host's,
which includes any search, since cuDNN's searches wait for the GPU.

Usage: python3 convnet.py [--sizes random|fixed] [--steps N | --seconds S] [--batch 32]
       [--no-benchmark]"""
import argparse
import random
import time

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--sizes", choices=["random", "fixed"], default="random")
p.add_argument("--steps", type=int, default=30, help="training steps (ignored with --seconds)")
p.add_argument("--seconds", type=float, default=0, help="train for this long instead of --steps")
p.add_argument("--batch", type=int, default=32)
p.add_argument("--no-benchmark", action="store_true", help="leave torch.backends.cudnn.benchmark off")
a = p.parse_args()

torch.manual_seed(0)
rng = random.Random(0)
torch.backends.cudnn.benchmark = not a.no_benchmark


def block(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


model = nn.Sequential(block(3, 64), block(64, 64), block(64, 64), block(64, 128, 2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sizes = list(range(96, 192, 8))  # 12 sizes, as images of varying resolution would give
times, seen = [], set()
start = time.perf_counter()
step = 0
while (time.perf_counter() - start < a.seconds) if a.seconds > 0 else step < a.steps:
    side = rng.choice(sizes) if a.sizes == "random" else 160
    seen.add(side)
    x = torch.randn(a.batch, 3, side, side, device="cuda")
    y = torch.randint(0, 10, (a.batch,), device="cuda")
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    step += 1
final_loss = loss.item()  # waits for the GPU
total = time.perf_counter() - start
print(f"sizes {a.sizes}: {step} steps in {total:.2f} s ({total / step * 1e3:.1f} ms per step), "
      f"{len(seen)} distinct image sizes, slowest step {max(times) * 1e3:.1f} ms, loss {final_loss:.4f}")
