"""Shared helpers for the real-GPU scenario corpus (tests/gpu/scenarios/*/prog.py).

Each scenario program does `sys.path.insert(0, <scenarios dir>)` and imports this module.
Everything here is deliberately plain PyTorch: small models, few steps, explicit settings.
"""
import os
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def log(*args):
    print("[%s pid %d] " % (time.strftime("%H:%M:%S"), os.getpid()), *args, flush=True)


# Benchmarks of the same program (tests/gpu/bench_search_budget.sh): SCENARIO_CUDNN_BENCHMARK=0/1
# overrides the program's cudnn.benchmark (and SCENARIO_CONV_EMPTY_CACHE=0, below, PyTorch's
# emptyCache after each search); SCENARIO_STEP_TIMES=1 times every train_step (with a synchronize)
# and finish() prints the median step of the last half ("steady: X ms/step").
_STEP_TIMES = [] if os.environ.get("SCENARIO_STEP_TIMES") == "1" else None


def setup(benchmark=True, seed=0):
    """Seeds, cuDNN benchmark setting, device cuda:0; prints versions."""
    if os.environ.get("SCENARIO_CUDNN_BENCHMARK") in ("0", "1"):
        benchmark = os.environ["SCENARIO_CUDNN_BENCHMARK"] == "1"
    random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.benchmark = bool(benchmark)
    # SCENARIO_CONV_EMPTY_CACHE=0: PyTorch does not empty its allocator's cache after each
    # benchmark search (what the search budget's cost is compared with, issue 29).
    if os.environ.get("SCENARIO_CONV_EMPTY_CACHE") == "0":
        torch._C._cudnn_set_conv_benchmark_empty_cache(False)
    if not torch.cuda.is_available():
        log("CUDA is not available")
        sys.exit(3)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    log("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(),
        "benchmark", torch.backends.cudnn.benchmark)
    return dev


class Net2d(nn.Module):
    """A small conv net for images: conv-bn-relu blocks, global pool, linear head."""

    def __init__(self, cin=3, width=32, blocks=3, classes=10):
        super().__init__()
        layers = []
        c = cin
        for i in range(blocks):
            layers += [nn.Conv2d(c, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
            if i < blocks - 1:
                layers.append(nn.MaxPool2d(2))
            c = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class Net1d(nn.Module):
    """A small 1-D conv net (audio-like): strided Conv1d stack, global pool, linear head."""

    def __init__(self, cin=1, width=32, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(cin, width, 9, stride=4, padding=4), nn.ReLU(inplace=True),
            nn.Conv1d(width, width, 5, stride=2, padding=2), nn.ReLU(inplace=True),
            nn.Conv1d(width, width, 3, stride=1, padding=1), nn.ReLU(inplace=True),
        )
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool1d(x, 1).flatten(1)
        return self.head(x)


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(x + y)


class SmallResNet(nn.Module):
    def __init__(self, width=64, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(inplace=True))
        self.layer1 = ResBlock(width)
        self.down = nn.Sequential(nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(2 * width), nn.ReLU(inplace=True))
        self.layer2 = ResBlock(2 * width)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layer2(self.down(self.layer1(self.stem(x))))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_opt(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def train_step(model, opt, x, y, autocast_dtype=None):
    opt.zero_grad(set_to_none=True)
    if autocast_dtype is not None:
        with torch.autocast("cuda", dtype=autocast_dtype):
            out = model(x)
            loss = F.cross_entropy(out.float(), y)
    else:
        out = model(x)
        loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    if _STEP_TIMES is not None:
        torch.cuda.synchronize()
        _STEP_TIMES.append(time.perf_counter())
    return loss


def labels(n, dev, classes=10):
    return torch.randint(0, classes, (n,), device=dev)


def finish(dev, t0, steps, last_loss=None):
    torch.cuda.synchronize(dev)
    dt = time.time() - t0
    extra = "" if last_loss is None else " last loss %.4f" % float(last_loss)
    log("result: %d steps in %.2f s (%.1f ms/step)%s" % (steps, dt, 1000.0 * dt / max(steps, 1), extra))
    if _STEP_TIMES and len(_STEP_TIMES) >= 4:
        d = sorted(b - a for a, b in zip(_STEP_TIMES[len(_STEP_TIMES) // 2:], _STEP_TIMES[len(_STEP_TIMES) // 2 + 1:]))
        log("steady: %.3f ms/step (median of the last %d steps)" % (1000.0 * d[len(d) // 2], len(d)))


# ---- two ranks on one GPU over gloo ---------------------------------------------------------

def set_tf32(enabled):
    """cuDNN TF32 for convolutions through ONE API: 2.9+'s fp32_precision where it exists (mixing
    it with the legacy allow_tf32 flag is refused by PyTorch), else the legacy flag."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        try:
            conv.fp32_precision = "tf32" if enabled else "ieee"
            log("cudnn.conv.fp32_precision =", conv.fp32_precision)
            return
        except Exception as e:  # noqa: BLE001
            log("cudnn.conv.fp32_precision setter failed:", repr(e))
    try:
        torch.backends.cudnn.allow_tf32 = bool(enabled)
        log("cudnn.allow_tf32 =", bool(enabled))
    except Exception as e:  # noqa: BLE001
        log("allow_tf32 setter failed:", repr(e))


def _read(obj, name):
    try:
        return getattr(obj, name)
    except Exception as e:  # noqa: BLE001  (reading a legacy flag after the new API raises)
        return "unreadable (%s)" % type(e).__name__


def ddp_train(rank, world, init_method, settings=None, steps=30, batch=32, size=64, dtype=None):
    """DDP over gloo with both ranks on cuda:0 (one GPU; NCCL refuses two ranks on one device).

    settings: optional callable(rank) run after the default setup (benchmark on) and before
    the model is built, to make one rank differ.
    """
    import torch.distributed as dist
    dev = setup(benchmark=True, seed=1234)
    if settings is not None:
        settings(rank)
    log("rank %d/%d benchmark=%s deterministic=%s allow_tf32=%s" % (
        rank, world, torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
        _read(torch.backends.cudnn, "allow_tf32")))
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    try:
        torch.manual_seed(1234)
        model = SmallResNet(width=32).to(dev)
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0])
        opt = make_opt(ddp)
        g = torch.Generator(device="cpu")
        g.manual_seed(100 + rank)
        t0 = time.time()
        loss = None
        for step in range(steps):
            x = torch.randn(batch, 3, size, size, generator=g).to(dev)
            y = torch.randint(0, 10, (batch,), generator=g).to(dev)
            loss = train_step(ddp, opt, x, y, autocast_dtype=dtype)
        finish(dev, t0, steps, loss)
        dist.barrier()
    finally:
        dist.destroy_process_group()
