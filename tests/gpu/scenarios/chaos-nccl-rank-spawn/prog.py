"""Chaos: torch.multiprocessing.spawn (no RANK variables), an NCCL process group of one rank per
GPU, 10 all_reduce calls. Under chaos-nccl-rank-spawn's plan rank 0's third fails
(ncclRemoteError): ProcessGroupNCCL raises, the worker dies, spawn raises in the parent."""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def work(index, world, port):
    torch.cuda.set_device(index)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=index, world_size=world)
    x = torch.ones(1 << 20, device="cuda")
    for i in range(10):
        dist.all_reduce(x)
        torch.cuda.synchronize()
        print(f"rank {index} all_reduce {i} ok", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    world = torch.cuda.device_count()
    if world == 0:
        raise SystemExit("no GPU")
    mp.spawn(work, args=(world, free_port()), nprocs=world, join=True)
