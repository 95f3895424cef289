"""A job that runs out of device memory on a request of known size, catches PyTorch's
OutOfMemoryError, prints its message, and carries on with a small step: the same program under
the default allocator, expandable_segments:True and backend:cudaMallocAsync (set through
PYTORCH_CUDA_ALLOC_CONF by the caller). Usage: oom_request.py [HOLD_GIB] [REQUEST_GIB]

HOLD_GIB of 4 GiB tensors are kept alive, then REQUEST_GIB more is asked for at once (larger
than what is left), so the failing request's size is the one PyTorch's message names."""
import sys

import torch

hold_gib = float(sys.argv[1]) if len(sys.argv) > 1 else 120
request_gib = float(sys.argv[2]) if len(sys.argv) > 2 else 30
torch.cuda.init()
held = []
while sum(t.numel() for t in held) * 4 < hold_gib * (1 << 30):
    held.append(torch.empty(1 << 30, dtype=torch.float32, device="cuda"))  # 4 GiB each
x = torch.randn(4096, 4096, device="cuda")
y = x @ x
torch.cuda.synchronize()
try:
    big = torch.empty(int(request_gib * (1 << 30)), dtype=torch.uint8, device="cuda")
    print("no OOM: the request fit", flush=True)
except torch.OutOfMemoryError as e:
    lines = str(e).split("\n")
    print("PYTORCH_OOM:", lines[0][:300], flush=True)
    # The cudaMallocAsync backend names the request on a line of its own.
    for line in lines[1:]:
        if line.strip().startswith("Requested"):
            print("PYTORCH_OOM_REQUESTED:", line.strip(), flush=True)
held.pop()
z = (y @ x).sum().item()  # carries on after the failure
print("carried on", z != 0, flush=True)
