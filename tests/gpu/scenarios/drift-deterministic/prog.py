"""Two ranks (torchrun, gloo, one GPU), both benchmark on; rank 1 sets cudnn.deterministic = True."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402



def settings(rank):
    if rank == 1:
        torch.backends.cudnn.deterministic = True


rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
C.ddp_train(rank, world, "env://", settings=settings, steps=30)
