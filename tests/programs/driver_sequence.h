// The CUDA driver sequence the driver capture tests compare with traces, shared by the programs
// that reach the driver in different ways (driver_paths: pointers from entry-point lookups and
// dlsym; driver_direct: linked calls). Output, one line each:
//   API RET            a call the program made, under libcuda's exported name
//   out API VALUE      what a failed allocation left in its output (the driver zeroes *dptr and
//                      leaves cuMemCreate's *handle alone; outputs start as kUnwritten)
//   wrapped NAME       a looked-up pointer lies in libcuprobe, in the wrapper named NAME
//   real NAME          a looked-up pointer lies outside libcuprobe
//   wrong NAME SYMBOL  a pointer lies in libcuprobe, but in another function
//   missing NAME       a lookup found nothing
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "cuprobe/hooks/driver_hooks.h"

namespace driver_test {

// One pointer per hooked driver function, named as libcuda exports it.
struct Functions {
#define DRIVER_TEST_SLOT(ret, name, sig, params, args, flags) decltype(&::sig) name = nullptr;
  CUPROBE_DRIVER_HOOKS(DRIVER_TEST_SLOT)
#undef DRIVER_TEST_SLOT
};

// The functions run_sequence calls.
// clang-format off
#define DRIVER_TEST_SEQUENCE_FUNCTIONS(X)                                                          \
  X(cuMemGetInfo_v2) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocAsync) X(cuMemFreeAsync)         \
  X(cuMemAllocManaged) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemAddressReserve) X(cuMemCreate)   \
  X(cuMemMap) X(cuMemSetAccess) X(cuMemUnmap) X(cuMemRelease) X(cuMemAddressFree)
// clang-format on

inline void print_call(const char* api, int ret) { std::printf("%s %d\n", api, ret); }

// Says where a looked-up pointer lies; `name` is what the wrapper, if any, must be called.
inline void print_pointer(const char* name, void* fn) {
  Dl_info info;
  if (fn == nullptr) {
    std::printf("missing %s\n", name);
  } else if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr ||
             std::strstr(info.dli_fname, "libcuprobe") == nullptr) {
    std::printf("real %s\n", name);
  } else if (info.dli_sname != nullptr && std::strcmp(info.dli_sname, name) == 0) {
    std::printf("wrapped %s\n", name);
  } else {
    std::printf("wrong %s %s\n", name, info.dli_sname ? info.dli_sname : "?");
  }
}

// Outputs start as a value no driver writes, so that a failure shows what it left there.
constexpr unsigned long long kUnwritten = 0xdead0000ull;

#define DRIVER_TEST_CALL(f, api, ...)          \
  do {                                         \
    if (f.api == nullptr) {                    \
      std::printf("missing %s\n", #api);       \
      break;                                   \
    }                                          \
    print_call(#api, int(f.api(__VA_ARGS__))); \
  } while (0)

// An allocation: also says what a failure left in its output.
#define DRIVER_TEST_ALLOC(f, api, out, ...)                                                   \
  do {                                                                                        \
    if (f.api == nullptr) {                                                                   \
      std::printf("missing %s\n", #api);                                                      \
      break;                                                                                  \
    }                                                                                         \
    int ret_ = int(f.api(&out, __VA_ARGS__));                                                 \
    print_call(#api, ret_);                                                                   \
    if (ret_ != CUDA_SUCCESS) std::printf("out %s %#llx\n", #api, (unsigned long long)(out)); \
  } while (0)

// cuMemGetInfo; cuMemAlloc 1 MiB + free; cuMemAllocAsync 3 MiB on stream 0 + free; managed 5 MiB
// + free; pinned host 7 KiB + free; then the virtual memory path on device 1: reserve 256 MiB,
// create 64 MiB, map, set access, unmap, release, free the range.
inline void run_sequence(const Functions& f) {
  constexpr size_t kMiB = 1u << 20;
  size_t free_bytes = 0, total = 0;
  DRIVER_TEST_CALL(f, cuMemGetInfo_v2, &free_bytes, &total);
  CUdeviceptr d = kUnwritten;
  DRIVER_TEST_ALLOC(f, cuMemAlloc_v2, d, 1 * kMiB);
  DRIVER_TEST_CALL(f, cuMemFree_v2, d);
  CUdeviceptr a = kUnwritten;
  DRIVER_TEST_ALLOC(f, cuMemAllocAsync, a, 3 * kMiB, nullptr);
  DRIVER_TEST_CALL(f, cuMemFreeAsync, a, nullptr);
  CUdeviceptr m = kUnwritten;
  DRIVER_TEST_ALLOC(f, cuMemAllocManaged, m, 5 * kMiB, CU_MEM_ATTACH_GLOBAL);
  DRIVER_TEST_CALL(f, cuMemFree_v2, m);
  void* h = nullptr;
  DRIVER_TEST_CALL(f, cuMemHostAlloc, &h, 7u << 10, 0u);
  DRIVER_TEST_CALL(f, cuMemFreeHost, h);

  CUdeviceptr va = 0;
  DRIVER_TEST_CALL(f, cuMemAddressReserve, &va, 256 * kMiB, 0, 0, 0);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  CUmemGenericAllocationHandle ph = kUnwritten;
  DRIVER_TEST_ALLOC(f, cuMemCreate, ph, 64 * kMiB, &prop, 0);
  DRIVER_TEST_CALL(f, cuMemMap, va, 64 * kMiB, 0, ph, 0);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DRIVER_TEST_CALL(f, cuMemSetAccess, va, 64 * kMiB, &access, 1);
  DRIVER_TEST_CALL(f, cuMemUnmap, va, 64 * kMiB);
  DRIVER_TEST_CALL(f, cuMemRelease, ph);
  DRIVER_TEST_CALL(f, cuMemAddressFree, va, 256 * kMiB);
}

}  // namespace driver_test
