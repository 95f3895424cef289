"""DDP ranks under torch.multiprocessing.spawn, which sets no RANK/LOCAL_RANK variable (issue 13):
each process joins an NCCL process group of one rank per GPU (one GPU is fine), all-reduces once,
and prints its rank. Under `cuprobe record`, `cuprobe analyze` must name every process by the rank
printed here, from NCCL ("ranks: 0, 1 (from NCCL communicators)"), and `cuprobe dump` must show
nccl_rank and nccl_world_size on each process line.

    cuprobe record -o run -- python3 tests/gpu/nccl_rank.py [--all-reduces N]
    cuprobe analyze run
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def work(index, world, port, all_reduces=1):
    assert "RANK" not in os.environ and "LOCAL_RANK" not in os.environ, "spawn should set no rank variable"
    torch.cuda.set_device(index)
    # The store's address only: no RANK/WORLD_SIZE variables, the rank is passed as an argument.
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=index, world_size=world)
    expected = world * (world + 1) / 2
    for i in range(all_reduces):
        x = torch.full((1 << 20,), float(index + 1), device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        assert x[0].item() == expected, (i, x[0].item(), expected)
    print(f"rank {dist.get_rank()} of {world} on cuda:{index} pid {os.getpid()}: sum {x[0].item():.0f}", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    world = torch.cuda.device_count()
    if world == 0:
        raise SystemExit("no GPU")
    # --all-reduces N (default 1): N all_reduce calls (the chaos scenario aims a fault at one).
    n = int(sys.argv[sys.argv.index("--all-reduces") + 1]) if "--all-reduces" in sys.argv else 1
    mp.spawn(work, args=(world, free_port(), n), nprocs=world, join=True)
