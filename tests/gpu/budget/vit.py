"""A transformer for the search budget's benchmark (tests/gpu/bench_search_budget.sh):
torchvision's ViT-B/16 trained on fixed 224x224 batches of 32, bf16 autocast, cudnn.benchmark on.
Its one convolution is the patch embedding; attention and MLPs are matmuls (cuBLAS) and
scaled_dot_product_attention. The budget must never apply."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))
import torch  # noqa: E402
import torchvision  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = torchvision.models.vit_b_16(num_classes=1000).to(dev)
opt = C.make_opt(model)
x = torch.randn(32, 3, 224, 224, device=dev)
y = C.labels(32, dev, classes=1000)
steps = int(os.environ.get("STEPS", "60"))
t0 = time.time()
loss = None
for step in range(steps):
    loss = C.train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)
    if step % 20 == 0:
        C.log("step", step, "loss %.4f" % float(loss))
C.finish(dev, t0, steps, loss)
