// Cost of the driver wrappers on a real driver: nanoseconds per call of driver functions reached
// the way PyTorch and NCCL reach them (pointers from cuGetProcAddress, which the shim replaces
// with recording wrappers), and per entry-point lookup. Run it with and without the shim
// (bench/driver_calls.sh interleaves rounds) and compare: the difference is the wrapper's cost.
// Needs a GPU; libcuda is opened at run time, never linked. With DRIVER_CALLS_CUDART=PATH the CUDA
// runtime at PATH is loaded too (into the global scope, as PyTorch loads it) and the device set
// through it, as in a PyTorch process: the shim then knows each call's device without asking the
// driver.
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

namespace {

double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

template <typename F>
double median_ns_per_call(int rounds, int n, F&& body) {
  std::vector<double> per;
  for (int r = 0; r < rounds; ++r) {
    double t0 = now_ns();
    for (int i = 0; i < n; ++i) body();
    per.push_back((now_ns() - t0) / n);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100000;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    fprintf(stderr, "driver_calls: cannot load libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  auto find = [&](const char* name) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st;
    if (get_proc(name, &fn, 12000, 0, &st) != CUDA_SUCCESS || fn == nullptr) {
      fprintf(stderr, "driver_calls: no %s\n", name);
      exit(2);
    }
    return fn;
  };
  auto cu_init = reinterpret_cast<CUresult (*)(unsigned)>(find("cuInit"));
  auto device_get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(find("cuDeviceGet"));
  auto retain = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(find("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<CUresult (*)(CUcontext)>(find("cuCtxSetCurrent"));
  auto mem_info = reinterpret_cast<CUresult (*)(size_t*, size_t*)>(find("cuMemGetInfo"));
  auto reserve = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
      find("cuMemAddressReserve"));
  auto addr_free = reinterpret_cast<CUresult (*)(CUdeviceptr, size_t)>(find("cuMemAddressFree"));
  auto mem_free = reinterpret_cast<CUresult (*)(CUdeviceptr)>(find("cuMemFree"));
  CUdevice dev;
  CUcontext ctx;
  if (cu_init(0) != CUDA_SUCCESS || device_get(&dev, 0) != CUDA_SUCCESS || retain(&ctx, dev) != CUDA_SUCCESS ||
      set_current(ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "driver_calls: no CUDA device\n");
    return 2;
  }
  if (const char* rt = getenv("DRIVER_CALLS_CUDART"); rt != nullptr && *rt != 0) {
    if (dlopen(rt, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      fprintf(stderr, "driver_calls: cannot load %s: %s\n", rt, dlerror());
      return 2;
    }
    auto set_device = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
    if (set_device == nullptr || set_device(0) != 0) {
      fprintf(stderr, "driver_calls: cudaSetDevice failed\n");
      return 2;
    }
  }
  Dl_info di;
  bool wrapped = dladdr(reinterpret_cast<void*>(mem_info), &di) && strstr(di.dli_fname, "cuprobe") != nullptr;
  size_t f = 0, t = 0;
  double info_ns = median_ns_per_call(7, n, [&] { mem_info(&f, &t); });
  double va_ns = median_ns_per_call(7, n / 10, [&] {
    CUdeviceptr p = 0;
    reserve(&p, 2 << 20, 0, 0, 0);
    addr_free(p, 2 << 20);
  });
  CUresult free_null = mem_free(0);
  double free_ns = median_ns_per_call(7, n, [&] { mem_free(0); });
  double lookup_ns = median_ns_per_call(7, n / 10, [&] {
    void* fn;
    CUdriverProcAddressQueryResult st;
    get_proc("cuMemCreate", &fn, 12000, 0, &st);
  });
  printf("%s%s cuMemFree(0) (returns %d) %.1f ns, cuMemGetInfo %.1f ns, cuMemAddressReserve+Free %.1f ns, "
         "cuGetProcAddress %.1f ns\n",
         wrapped ? "traced" : "plain", (getenv("DRIVER_CALLS_CUDART") && *getenv("DRIVER_CALLS_CUDART")) ? " (with runtime)" : "", int(free_null),
         free_ns, info_ns, va_ns,
         lookup_ns);
  return 0;
}
