"""Training steps of a torchvision ResNet for the plan-pinning validation (validate_pinning.sh):
prints one JSON line per run with every step's wall time (the first one holds cudnn.benchmark's
searches), and optionally a probe: hashes of a fixed forward output and of the gradients for a
fixed input, so that two ranks (or two runs) can be compared bitwise.

  --sizes 224            input side per step, cycled (several: a dynamic-shape job)
  --deterministic        torch.backends.cudnn.deterministic = True
  --ranks 2              torch.multiprocessing.spawn DDP ranks on the visible GPUs (gloo when
                         there are fewer GPUs than ranks), each printing its own line
"""
import argparse
import hashlib
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torchvision


def digest(t):
    return hashlib.sha256(t.detach().float().cpu().numpy().tobytes()).hexdigest()[:16]


def run(rank, world, a):
    if world > 1:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(a.port))
        gpus = torch.cuda.device_count()
        torch.cuda.set_device(rank % gpus)
        dist.init_process_group("nccl" if gpus >= world else "gloo", rank=rank, world_size=world)
    torch.backends.cudnn.benchmark = bool(a.benchmark)
    torch.backends.cudnn.deterministic = bool(a.deterministic)
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(num_classes=100).cuda().to(memory_format=torch.channels_last)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sizes = [int(s) for s in a.sizes.split(",")]
    times = []
    for step in range(a.steps):
        side = sizes[step % len(sizes)]
        x = torch.randn(a.batch, 3, side, side, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 100, (a.batch,), device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    out = {"rank": rank, "model": a.model, "benchmark": a.benchmark, "sizes": sizes, "steps_s": [round(t, 5) for t in times]}
    if a.probe:
        # The same input and weights on every rank: with the same plans the results match bitwise.
        torch.manual_seed(1)
        probe = getattr(torchvision.models, a.model)(num_classes=100).cuda().to(memory_format=torch.channels_last)
        px = torch.randn(a.batch, 3, sizes[0], sizes[0], device="cuda").to(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            py = probe(px)
        out["forward"] = digest(py)
        py.float().sum().backward()
        out["grad_conv1"] = digest(probe.conv1.weight.grad)
    print("PIN_TRAIN " + json.dumps(out), flush=True)
    if world > 1:
        import torch.distributed as dist
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--sizes", default="224")
    p.add_argument("--benchmark", type=int, default=1)
    p.add_argument("--deterministic", action="store_true", help="cudnn.deterministic: PyTorch drops nondeterministic plans")
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--probe", action="store_true")
    p.add_argument("--port", type=int, default=29541)
    a = p.parse_args()
    if a.ranks > 1:
        import torch.multiprocessing as mp
        mp.spawn(run, args=(a.ranks, a), nprocs=a.ranks)
    else:
        run(0, 1, a)


if __name__ == "__main__":
    sys.exit(main())
