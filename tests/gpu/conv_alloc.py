"""GPU check for the core shim: allocates tensors, runs a convolution forward and backward,
uses a DataLoader with two worker processes (fork), and prints results that must be identical
with and without the shim. Timing goes to stderr (it is allowed to differ).

Usage: python3 conv_alloc.py [steps]"""
import statistics
import sys
import time

import torch

torch.manual_seed(0)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30

dataset = torch.utils.data.TensorDataset(torch.randn(64, 64, 32, 32))
loader = torch.utils.data.DataLoader(dataset, batch_size=16, num_workers=2)
conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # one large caching-allocator segment
results = []
for batch, in loader:
    x = batch.cuda(non_blocking=True).requires_grad_()
    y = conv(x)
    loss = y.square().mean()
    loss.backward()
    results.append((loss.item(), x.grad.double().sum().item(), conv.weight.grad.double().sum().item()))
    conv.weight.grad = None
torch.cuda.synchronize()
for r in results:
    print(" ".join(repr(v) for v in r))
print("allocated", torch.cuda.memory_allocated(), "reserved", torch.cuda.memory_reserved())

x = torch.randn(32, 64, 56, 56, device="cuda", requires_grad=True)
times = []
for _ in range(steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    conv(x).sum().backward()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
print(f"median_step_ms {statistics.median(times[5:]) * 1e3:.3f}", file=sys.stderr)
