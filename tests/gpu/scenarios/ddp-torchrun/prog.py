"""DDP over gloo, two ranks on cuda:0, launched by torchrun; fixed shapes, benchmark on."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
C.ddp_train(rank, world, "env://", steps=int(os.environ.get("STEPS", "30")))
