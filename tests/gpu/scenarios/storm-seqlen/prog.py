"""Token model (Embedding + Conv1d over the sequence) with a different sequence length every step."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402



class TokenConv(nn.Module):
    def __init__(self, vocab=1000, dim=64, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.c1 = nn.Conv1d(dim, dim, 3, padding=1)
        self.c2 = nn.Conv1d(dim, dim, 3, padding=1)
        self.head = nn.Linear(dim, classes)

    def forward(self, tok):
        x = self.emb(tok).transpose(1, 2).contiguous()  # [B, dim, L]
        x = F.relu(self.c1(x))
        x = F.relu(self.c2(x))
        return self.head(x.mean(dim=2))


dev = C.setup(benchmark=True)
model = TokenConv().to(dev)
opt = C.make_opt(model)
rng = random.Random(13)
t0 = time.time()
steps = 30
for step in range(steps):
    n = rng.randrange(32, 2048)
    tok = torch.randint(0, 1000, (16, n), device=dev)
    loss = C.train_step(model, opt, tok, C.labels(16, dev))
    if step % 10 == 0:
        C.log("step", step, "seqlen", n, "loss", float(loss))
C.finish(dev, t0, steps, loss)
