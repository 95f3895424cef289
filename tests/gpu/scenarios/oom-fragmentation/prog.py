"""Caching-allocator fragmentation under cuprobe's 6 GiB memory cap (run.sh): 870 tensors of
6 MiB (three to a 20 MiB segment), two of every three freed, then one 1 GiB request fails
although about 3.9 GiB of reserved memory is free."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=False)
MIB = 2**20
n = 870
ts = []
for i in range(n):
    ts.append(torch.empty(6 * MIB, dtype=torch.uint8, device=dev))
torch.cuda.synchronize()
C.log("allocated %d x 6 MiB: allocated %.2f GiB reserved %.2f GiB" % (
    n, torch.cuda.memory_allocated() / 2**30, torch.cuda.memory_reserved() / 2**30))
keep = [t for i, t in enumerate(ts) if i % 3 == 0]
ts = None
torch.cuda.synchronize()
C.log("kept %d: allocated %.2f GiB reserved %.2f GiB" % (
    len(keep), torch.cuda.memory_allocated() / 2**30, torch.cuda.memory_reserved() / 2**30))
try:
    big = torch.empty(1024 * MIB, dtype=torch.uint8, device=dev)
    C.log("result: the 1 GiB request succeeded (no fragmentation OOM)")
except torch.OutOfMemoryError as e:
    C.log("caught:", str(e).splitlines()[0][:300])
    C.log("result: fragmentation OOM; allocated %.2f GiB reserved %.2f GiB" % (
        torch.cuda.memory_allocated() / 2**30, torch.cuda.memory_reserved() / 2**30))
