"""A healthy job under PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: training at batch 192
(about ten GiB of activations a step, freed into the stream-ordered pool after each backward) and
an evaluation at batch 384 every 10 steps, fixed image size, benchmark on. The pool keeps what
was freed reserved (PyTorch sets its release threshold to the maximum): the device reports that
memory used though no tensor holds it. cuprobe saw every byte allocated: nothing to report."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
C.log("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "(unset)"))
model = C.Net2d(width=64, blocks=3).to(dev)
opt = C.make_opt(model)
steps = 40
t0 = time.time()
loss = None
for step in range(steps):
    x = torch.randn(192, 3, 224, 224, device=dev)
    loss = C.train_step(model, opt, x, C.labels(192, dev))
    if step % 10 == 9:
        model.eval()
        with torch.no_grad():
            out = model(torch.randn(384, 3, 224, 224, device=dev))
        model.train()
        C.log("step", step, "loss %.4f" % float(loss), "eval %.3f" % float(out.float().mean()),
              "allocated %.1f GiB reserved %.1f GiB" % (torch.cuda.memory_allocated() / 2**30,
                                                        torch.cuda.memory_reserved() / 2**30))
C.finish(dev, t0, steps, loss)
