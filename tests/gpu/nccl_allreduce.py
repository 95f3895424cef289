"""Two ranks all-reducing through NCCL (torchrun --nproc-per-node 2): NCCL's own device memory
(its buffers, taken through the driver's virtual memory API when NCCL_CUMEM_ENABLE is on, its
default since 2.19) must show up in the trace with NCCL as owner."""
import os

import torch
import torch.distributed as dist

rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
x = torch.ones(64 << 20, device="cuda")  # 256 MiB
for _ in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {rank}: sum {x[0].item():.0f}", flush=True)
dist.destroy_process_group()
