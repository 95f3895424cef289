"""Memory cuprobe cannot see: cudaMalloc called through a handle of libcudart from dlopen + dlsym
(ctypes.CDLL), which is not in the preload's lookup scope. memory-coverage must report about
that much unaccounted on the device. Usage: unseen_alloc.py GIB"""
import ctypes
import sys
import time

import torch

gib = float(sys.argv[1]) if len(sys.argv) > 1 else 10
a = torch.empty(1 << 28, device="cuda")  # 1 GiB seen through the caching allocator
path = next(line.split()[-1] for line in open("/proc/self/maps") if "libcudart.so" in line)
rt = ctypes.CDLL(path)
p = ctypes.c_void_p()
r = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(int(gib * (1 << 30))))
print("hidden cudaMalloc", r, hex(p.value or 0), "from", path, flush=True)
time.sleep(0.6)  # past the sampling interval
b = torch.empty(1 << 28, device="cuda")  # the next allocation samples the device
torch.cuda.synchronize()
print("done", flush=True)
