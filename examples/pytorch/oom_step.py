"""A batch-size finder that goes too far: trains a convolutional network on 224x224 images,
doubling the batch every step until the GPU runs out of memory. The out-of-memory error is
not caught, as in a training script that simply crashes; `cuprobe analyze` then explains it
(what was asked for, what was live and for what, what PyTorch freed and retried).

Usage: python3 oom_step.py [--start-batch 64] [--side 224]"""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--start-batch", type=int, default=64)
p.add_argument("--side", type=int, default=224)
a = p.parse_args()
torch.manual_seed(0)
layers = [nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU()]
for _ in range(3):
    layers += [nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU()]
model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batch = a.start_batch
total = torch.cuda.get_device_properties(0).total_memory
while True:
    print(f"batch {batch}: activations about {batch * 64 * a.side * a.side * 4 * 13 / 2**30:.1f} GiB "
          f"of {total / 2**30:.0f} GiB", flush=True)
    x = torch.randn(batch, 3, a.side, a.side, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    print(f"batch {batch}: ok, peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB", flush=True)
    batch *= 2
