"""A non-storm job for the search budget's benchmark (tests/gpu/bench_search_budget.sh):
torchvision's ResNet-50 trained on fixed 224x224 batches of 64, bf16 autocast, channels-last,
cudnn.benchmark on. Every layer searches once, in the first step; the budget must never apply."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))
import torch  # noqa: E402
import torchvision  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = torchvision.models.resnet50(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
opt = C.make_opt(model)
x = torch.randn(64, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
y = C.labels(64, dev, classes=1000)
steps = int(os.environ.get("STEPS", "60"))
t0 = time.time()
loss = None
for step in range(steps):
    loss = C.train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)
    if step % 20 == 0:
        C.log("step", step, "loss %.4f" % float(loss))
C.finish(dev, t0, steps, loss)
