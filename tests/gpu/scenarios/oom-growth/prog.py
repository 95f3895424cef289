"""Shapes that grow until the device runs out: the batch grows by a quarter every step (a
curriculum or a dynamic batcher gone wrong), benchmark off, until torch.OutOfMemoryError ends
the process (not caught). No empty_cache() anywhere: the allocator's frees on the way are its
own, releasing its cache to retry a failed request. The allocator is whatever
PYTORCH_CUDA_ALLOC_CONF says (run.sh of oom-growth, oom-growth-expandable, oom-growth-mallocasync)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=False)
C.log("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "(unset)"))
model = C.Net2d(width=64, blocks=3).to(dev)
opt = C.make_opt(model)
batch = 32.0
t0 = time.time()
step = 0
while True:  # ends with torch.OutOfMemoryError
    b = int(batch)
    x = torch.randn(b, 3, 224, 224, device=dev)
    loss = C.train_step(model, opt, x, C.labels(b, dev))
    C.log("step", step, "batch", b, "loss %.4f" % float(loss), "reserved %.1f GiB" % (torch.cuda.memory_reserved() / 2**30))
    step += 1
    batch *= 1.25
