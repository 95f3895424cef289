"""torch.compile with mode="reduce-overhead" (Inductor kernels, then CUDA graphs: cudagraph
trees for forward and backward) on a small ResNet, fixed shapes, bf16 autocast, benchmark on,
60 training steps. Compilation runs in this process and in compile workers; after the first
steps every step is a graph replay. A healthy job: nothing to report."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
model = C.SmallResNet(width=32).to(dev)
opt = C.make_opt(model)
compiled = torch.compile(model, mode="reduce-overhead")
x = torch.randn(32, 3, 64, 64, device=dev)
y = C.labels(32, dev)
steps = 60
t0 = time.time()
loss = None
for step in range(steps):
    torch.compiler.cudagraph_mark_step_begin()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = compiled(x)
    loss = F.cross_entropy(out.float(), y)
    loss.backward()
    opt.step()
    if step % 20 == 0:
        C.log("step", step, "loss %.4f" % float(loss))
C.finish(dev, t0, steps, loss)
