"""Non-storm jobs for the search budget's benchmark (tests/gpu/bench_search_budget.sh), fixed
shapes, bf16 autocast, cudnn.benchmark on: every convolution searches once, in the first step,
and the budget must never apply.
  python3 fixed.py resnet50   torchvision's ResNet-50, batches of 64 at 224x224, channels-last
  python3 fixed.py vit        torchvision's ViT-B/16 (a transformer: its one convolution is the
                              patch embedding; attention and MLPs are matmuls and
                              scaled_dot_product_attention), batches of 32 at 224x224
STEPS (default 60) sets the number of training steps; BATCH the batch size (default: the model's)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))
import torch  # noqa: E402
import torchvision  # noqa: E402
import common as C  # noqa: E402

which = sys.argv[1] if len(sys.argv) > 1 else "resnet50"
dev = C.setup(benchmark=True)
if which == "resnet50":
    batch, fmt = 64, torch.channels_last
    model = torchvision.models.resnet50(num_classes=1000).to(dev).to(memory_format=fmt)
elif which == "vit":
    batch, fmt = 32, torch.contiguous_format
    model = torchvision.models.vit_b_16(num_classes=1000).to(dev)
else:
    sys.exit("fixed.py: unknown model %r (resnet50 or vit)" % which)
batch = int(os.environ.get("BATCH", batch))
opt = C.make_opt(model)
x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=fmt)
y = C.labels(batch, dev, classes=1000)
steps = int(os.environ.get("STEPS", "60"))
t0 = time.time()
loss = None
for step in range(steps):
    loss = C.train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)
    if step % 20 == 0:
        C.log(which, "step", step, "loss %.4f" % float(loss))
C.finish(dev, t0, steps, loss)
