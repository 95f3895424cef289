"""A training loop that reports how it fares when calls fail: the subject of cuprobe's fault
mode examples (examples/faults). It catches what PyTorch raises, says so, and ends with one
"result:" line, so a run under `cuprobe record --fault ...` shows what the job did with the
injected failures.

Usage: python3 chaos_train.py [--steps N] [--batch B] [--size S] [--benchmark]
       [--resnet50] [--big-alloc-gib G]
  --big-alloc-gib G  before training, try to allocate G GiB once (and catch the failure)
"""
import argparse
import time

import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=5)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--size", type=int, default=64, help="image side")
p.add_argument("--benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
p.add_argument("--resnet50", action="store_true", help="torchvision ResNet-50 instead of a small conv net")
p.add_argument("--big-alloc-gib", type=float, default=0)
a = p.parse_args()

torch.manual_seed(0)
torch.backends.cudnn.benchmark = a.benchmark


def first_line(e):
    return str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__


def block(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


if a.resnet50:
    import torchvision
    model = torchvision.models.resnet50(num_classes=10).cuda()
else:
    model = nn.Sequential(block(3, 32), block(32, 64, 2), block(64, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(64, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

if a.big_alloc_gib > 0:
    try:
        big = torch.empty(int(a.big_alloc_gib * 2**30), dtype=torch.uint8, device="cuda")
        print(f"allocated {a.big_alloc_gib} GiB")
        del big
    except torch.OutOfMemoryError as e:
        print(f"caught torch.OutOfMemoryError for the {a.big_alloc_gib} GiB tensor: {first_line(e)}")

done, why = 0, ""
t0 = time.perf_counter()
for step in range(a.steps):
    x = torch.randn(a.batch, 3, a.size, a.size, device="cuda")
    y = torch.randint(0, 10, (a.batch,), device="cuda")
    try:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss_value = loss.item()
    except torch.OutOfMemoryError as e:
        why = f"torch.OutOfMemoryError at step {step}: {first_line(e)}"
        break
    except RuntimeError as e:
        why = f"RuntimeError at step {step}: {first_line(e)}"
        break
    done += 1
if why:
    print(f"caught {why}")
    print(f"result: stopped after {done} of {a.steps} steps")
else:
    print(f"result: completed {done} of {a.steps} steps in {time.perf_counter() - t0:.2f} s, loss {loss_value:.4f}")
