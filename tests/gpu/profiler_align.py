"""A short conv-net training loop under torch.profiler, for checking that cuprobe's exports line
up with the profiler's (Kineto) trace of the same run.

Usage: python3 profiler_align.py KINETO_JSON [--steps N]

Each step ends with torch.cuda.synchronize() (cudaDeviceSynchronize), a call both tools record
one event for: tests/gpu/compare_alignment.py pairs them and measures the clock offset.
cudnn.benchmark is on, so the first steps search (cuprobe's plan-selection slices).
"""
import argparse

import torch
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("kineto_json")
ap.add_argument("--steps", type=int, default=12)
args = ap.parse_args()

torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")
model = nn.Sequential(
    nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
    nn.Conv2d(64, 128, 3, padding=1, stride=2), nn.BatchNorm2d(128), nn.ReLU(),
    nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 3, 64, 64, device=dev)
y = torch.randint(0, 10, (32,), device=dev)

with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                        torch.profiler.ProfilerActivity.CUDA]) as prof:
    for step in range(args.steps):
        with torch.profiler.record_function(f"step {step}"):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
prof.export_chrome_trace(args.kineto_json)
print(f"steps {args.steps} loss {loss.item():.4f} kineto trace {args.kineto_json}")
