"""cuDNN capture check on a real GPU: Conv2d(64,64,3,pad 1) forward and backward over several
input sizes (each size is a new problem for fwd, dgrad and wgrad), through PyTorch's cuDNN
convolution path (the backend API, or the legacy API with TORCH_CUDNN_V8_API_DISABLED=1).

Usage: python3 cudnn_conv.py [--benchmark] [--shapes N] [--steps K]
Prints the number of distinct problems it ran and a checksum."""
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--benchmark", action="store_true")
p.add_argument("--shapes", type=int, default=3)
p.add_argument("--steps", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
torch.backends.cudnn.benchmark = a.benchmark
conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
total = 0.0
sizes = [16 + 8 * i for i in range(a.shapes)]
for side in sizes:
    for _ in range(a.steps):
        x = torch.randn(8, 64, side, side, device="cuda", requires_grad=True)
        y = conv(x)
        y.square().mean().backward()
        total += float(y.detach().float().mean())
torch.cuda.synchronize()
print(f"problems {3 * len(sizes)} (fwd, dgrad, wgrad for sides {sizes}) checksum {total:.4f}")
