"""A DDP training loop that runs until it is stopped (or --steps N), for shutdown timing
(shutdown_timing.py) and chaos tests (validate_chaos.sh: --timeout S is the process group's
collective timeout, after which the NCCL watchdog or gloo gives up).
Launched by torchrun (LOCAL_RANK set) or with --spawn N (torch.multiprocessing.spawn). Ranks
share GPUs when there are fewer GPUs than ranks (then the gloo backend: NCCL refuses two ranks
on one GPU). Prints "step N" lines on rank 0, flushed."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, world, port, steps=0, timeout=0):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    gpus = torch.cuda.device_count()
    device = rank % gpus
    torch.cuda.set_device(device)
    backend = "nccl" if gpus >= world else "gloo"
    kwargs = {"timeout": __import__("datetime").timedelta(seconds=timeout)} if timeout else {}
    dist.init_process_group(backend, rank=rank, world_size=world, **kwargs)
    torch.backends.cudnn.benchmark = True
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
    model = nn.parallel.DistributedDataParallel(model, device_ids=[device])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    step = 0
    while not steps or step < steps:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        step += 1
        if step % 10 == 0:
            torch.cuda.synchronize()
            if rank == 0:
                print(f"step {step} backend {backend}", flush=True)
    dist.destroy_process_group()
    print(f"rank {rank} done after {step} steps", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
    p.add_argument("--port", type=int, default=29533)
    p.add_argument("--steps", type=int, default=0, help="stop after N steps (0: run until stopped)")
    p.add_argument("--timeout", type=int, default=0, help="the process group's timeout in seconds (0: its default)")
    a = p.parse_args()
    if a.spawn:
        mp.spawn(worker, args=(a.spawn, a.port, a.steps, a.timeout), nprocs=a.spawn)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a.port, a.steps, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
