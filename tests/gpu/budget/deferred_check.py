"""The search budget's deferred searches on real cuDNN (docs/search-budget.md): a conv net whose
batch cycles through a few sizes, benchmark on, TF32 off, with 50 ms of other work a step so that
the searches' share of the time falls under the budget. Run under `cuprobe record
--search-budget 20` (the first step's searches take about a second; 120 steps of ~60 ms bring
their share under 20%, not under 5%): the first new batch sizes are budgeted, and once their plans have run a few
times the shim searches them and swaps the winners in under PyTorch. Every step checks the
convolutions' forward output and gradients (input and weights) against PyTorch's own non-cuDNN convolution (the
reference): a swapped plan must compute the same thing. Prints "deferred-check: N steps, max
forward error E, max grad error G" and exits 1 when an error passes 1e-3 (relative)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import common as C  # noqa: E402

dev = C.setup(benchmark=True)
# Full fp32 for both paths, through one API (PyTorch refuses mixing the legacy allow_tf32 flags with
# 2.9+'s fp32_precision): cuDNN's convolutions and the reference's matmuls.
C.set_tf32(False)
matmul = torch.backends.cuda.matmul
if hasattr(matmul, "fp32_precision"):
    matmul.fp32_precision = "ieee"
else:
    matmul.allow_tf32 = False
g = torch.Generator(device="cpu").manual_seed(3)
weights = [torch.randn(64, 3 if i == 0 else 64, 3, 3, generator=g).div(8).to(dev).requires_grad_() for i in range(4)]


def run(x, use_cudnn):
    """Forward, then the gradients of the input and the weights (backward data and backward
    filter), with cuDNN or with PyTorch's own convolution for forward and backward alike.
    torch.backends.cudnn.flags() reads the legacy TF32 flag too: the plain setter instead."""
    torch.backends.cudnn.enabled = use_cudnn
    try:
        x = x.detach().clone().requires_grad_()
        y = x
        for w in weights:
            y = torch.tanh(F.conv2d(y, w, padding=1))  # smooth: no ReLU mask to flip between paths
        grads = torch.autograd.grad(y.sum(), [x] + weights)
        torch.cuda.synchronize()
        return y.detach(), grads
    finally:
        torch.backends.cudnn.enabled = True


def rel(a, b):
    return float((a - b).abs().max() / (b.abs().max() + 1e-12))


sizes = [8] + [16, 24, 32, 40] * int(os.environ.get("ROUNDS", "30"))
worst_fwd = worst_grad = 0.0
worst_at = (0, 0)
t0 = time.time()
for step, n in enumerate(sizes):
    x = torch.randn(n, 3, 56, 56, generator=g).to(dev)
    y, grads = run(x, True)
    yr, refs = run(x, False)
    fwd, grad = rel(y, yr), max(rel(a, b) for a, b in zip(grads, refs))
    if grad > worst_grad:
        worst_at = (step, n)
    worst_fwd, worst_grad = max(worst_fwd, fwd), max(worst_grad, grad)
    torch.cuda.synchronize()
    time.sleep(0.05)  # the job's other work
C.log("deferred-check: %d steps, max forward error %.3g, max grad error %.3g (relative; worst at step %d, batch %d)"
      % (len(sizes), worst_fwd, worst_grad, worst_at[0], worst_at[1]))
sys.exit(1 if worst_fwd > 1e-3 or worst_grad > 1e-3 else 0)
