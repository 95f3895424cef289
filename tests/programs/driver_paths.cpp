// Reaches the CUDA driver without linking it, the three ways programs do, then runs the driver
// sequence (driver_sequence.h) through the pointers it got:
//   driver_paths entry     cudaGetDriverEntryPointByVersion at 12000 (PyTorch, CUDA graphs)
//   driver_paths procaddr [LIBCUDA_PATH]  dlopen libcuda, dlsym its cuGetProcAddress_v2, lookups
//                                         through it
//   driver_paths dlsym [LIBCUDA_PATH]     dlopen libcuda, dlsym each name
// LIBCUDA_PATH defaults to libcuda.so.1 (found by name).
// Every function of the shim's driver table is looked up (the per-thread variants with the
// per-thread flag), and so are cuCtxGetDevice (which cuprobe does not wrap) and, in the lookup
// modes, "cuMemAlloc" at 3010 (older than cuMemAlloc_v2, printed as cuMemAlloc@3010): a lookup
// line "API RET" per lookup call, then where the pointer lies (driver_sequence.h's format).
#include <cuda_runtime_api.h>

#include <cstring>

#include "driver_sequence.h"

namespace {

using driver_test::Functions;
using driver_test::print_call;
using driver_test::print_pointer;

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

constexpr int kVersion = 12000;

// One lookup by the name cuGetProcAddress takes: through the driver's cuGetProcAddress, or
// through the runtime when there is none.
void* look_up(GetProcAddress driver, const char* symbol, int version, bool per_thread) {
  void* fn = nullptr;
  if (driver == nullptr) {
    cudaDriverEntryPointQueryResult st{};
    unsigned long long flags = per_thread ? cudaEnablePerThreadDefaultStream : cudaEnableDefault;
    print_call("cudaGetDriverEntryPointByVersion",
               int(cudaGetDriverEntryPointByVersion(symbol, &fn, unsigned(version), flags, &st)));
  } else {
    CUdriverProcAddressQueryResult st{};
    cuuint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    print_call("cuGetProcAddress_v2", int(driver(symbol, &fn, version, flags, &st)));
  }
  return fn;
}

void look_up_all(GetProcAddress driver, Functions& f) {
#define LOOK_UP(api, name, version, per_thread)             \
  {                                                         \
    void* fn = look_up(driver, name, kVersion, per_thread); \
    print_pointer(#api, fn);                                \
    f.api = reinterpret_cast<decltype(f.api)>(fn);          \
  }
  CUPROBE_DRIVER_QUERIES(LOOK_UP)
#undef LOOK_UP
  print_pointer("cuCtxGetDevice", look_up(driver, "cuCtxGetDevice", kVersion, false));
  print_pointer("cuMemAlloc@3010", look_up(driver, "cuMemAlloc", 3010, false));
}

void* open_driver(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) std::fprintf(stderr, "driver_paths: %s\n", dlerror());
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const char* path = argc > 2 ? argv[2] : "libcuda.so.1";
  Functions f;
  if (std::strcmp(mode, "entry") == 0) {
    look_up_all(nullptr, f);
  } else if (std::strcmp(mode, "procaddr") == 0) {
    void* h = open_driver(path);
    if (h == nullptr) return 3;
    void* gpa = dlsym(h, "cuGetProcAddress_v2");
    print_pointer("cuGetProcAddress_v2", gpa);
    if (gpa == nullptr) return 3;
    look_up_all(reinterpret_cast<GetProcAddress>(gpa), f);
  } else if (std::strcmp(mode, "dlsym") == 0) {
    void* h = open_driver(path);
    if (h == nullptr) return 3;
#define FIND(ret, name, sig, params, args, flags)    \
  {                                                  \
    void* fn = dlsym(h, #name);                      \
    print_pointer(#name, fn);                        \
    f.name = reinterpret_cast<decltype(f.name)>(fn); \
  }
    CUPROBE_DRIVER_HOOKS(FIND)
#undef FIND
    print_pointer("cuCtxGetDevice", dlsym(h, "cuCtxGetDevice"));
  } else {
    std::fprintf(stderr, "usage: driver_paths entry|procaddr|dlsym [LIBCUDA_PATH]\n");
    return 2;
  }
  driver_test::run_sequence(f);
  return 0;
}
