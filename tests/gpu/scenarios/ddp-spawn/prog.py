"""DDP over gloo, two ranks on cuda:0, started with torch.multiprocessing.spawn (no RANK variables)."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

import torch.multiprocessing as mp  # noqa: E402


def worker(rank, world, port):
    C.ddp_train(rank, world, "tcp://127.0.0.1:%d" % port, steps=30)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29522
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        os.environ.pop(k, None)
    mp.spawn(worker, args=(2, port), nprocs=2, join=True)
