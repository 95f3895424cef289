// Test double of libcudart.so.13 (same soname and symbol version), generated from the shim's
// hook table so that every hooked function exists here with the vendor's signature. Built with
// -DFAKECUDA_RUNTIME_MAJOR=12 it is libcudart.so.12 instead (a CUDA 12.8 runtime): CUDA 12's
// cudaDeviceProp layout (cuda12_declarations.h) behind cudaGetDeviceProperties[_v2], its version
// (12080) behind cudaRuntimeGetVersion and the version-less entry-point lookup, and the _v2
// names CUDA 13 dropped (fake_cudart12.map; the .13 map leaves them out).
//
// Behaviour, controlled through the environment so that programs run under the shim need no
// test-specific code:
//   FAKECUDA_DEVICES=N        device count (default 2)
//   FAKECUDA_MEM=BYTES        memory per device (default 80 GiB); allocations beyond it fail
//                             with cudaErrorMemoryAllocation, as the real runtime does
//   FAKECUDA_FAIL=API:CODE[:NTH[:TIMES]],...
//                             the NTH call (1-based, default 1) of API and the TIMES-1 calls
//                             after it (default 1) return CODE without doing anything
//   FAKECUDA_DELAY_US=API:US,...  each call of API first sleeps US microseconds
//   FAKECUDA_FLAVOR           compiled in (-DFAKECUDA_FLAVOR=N): cudaRuntimeGetVersion returns
//                             13000 + N (12080 + N for the .12 build), so tests can tell two
//                             copies apart
//   FAKECUDA_DEVICE_NAME      the device name cudaGetDeviceProperties reports, as the driver
//                             double's cuDeviceGetName does (default "cuprobe test double")
// Stream-ordered allocations (cudaMallocAsync, cudaMallocFromPoolAsync) come from one pool per
// device that keeps freed memory reserved, as PyTorch's cudaMallocAsync backend sets it up (release
// threshold at the maximum): cudaMemGetInfo counts the pool's reserved bytes as used, and
// cudaDeviceGetMemPool / cudaMemPoolGetAttribute report them (reserved and used, current). A
// request takes the smallest free block of the pool that holds it (the rest stays free) or
// reserves a new block of its size: free blocks are never merged, so a job whose requests grow
// leaves the pool holding more than it ever had live, as the real pool can.
// Errors are sticky per thread the way the runtime reports them: cudaGetLastError returns and
// clears the last error, cudaPeekAtLastError returns it.
//
// The driver, as the real runtime reaches it: libcuda.so.1 (the driver double, fake_cuda.cpp,
// found beside this file) opened privately and initialised (cuInit) at the first call, and driver
// entry-point lookups answered through its cuGetProcAddress_v2. Without a loadable libcuda, lookups hand back
// a dummy function. Once the program has a libcuda loaded, cudaSetDevice makes its device the
// driver's current one and cudaMemGetInfo counts the driver's allocations as used.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api.h"
#include "fake_script.h"

#ifndef FAKECUDA_FLAVOR
#define FAKECUDA_FLAVOR 0
#endif
#ifndef FAKECUDA_RUNTIME_MAJOR
#define FAKECUDA_RUNTIME_MAJOR 13
#endif
#if FAKECUDA_RUNTIME_MAJOR == 12
#define CUDA12_STRUCTURES_ONLY
#include "cuda12_declarations.h"
#endif

namespace fake {

using cuprobe::ApiId;
using cuprobe::kApiCount;

// What cudaRuntimeGetVersion says, and the version the version-less entry-point lookup uses.
constexpr int kRuntimeVersion = (FAKECUDA_RUNTIME_MAJOR == 12 ? 12080 : 13000) + FAKECUDA_FLAVOR;

struct State {
  int devices = 2;
  uint64_t mem = 80ull << 30;
  std::vector<Script> fail[kApiCount];
  uint64_t delay_us[kApiCount] = {};
  std::atomic<uint64_t> calls[kApiCount] = {};
  std::mutex mu;
  std::unordered_map<uintptr_t, std::pair<int, uint64_t>> allocations;  // ptr -> (device, size)
  uint64_t live[64] = {};
  // The stream-ordered pool of each device: bytes reserved on the device, bytes allocated from it.
  uint64_t pool_reserved[64] = {};
  uint64_t pool_used[64] = {};
  std::unordered_map<uintptr_t, std::pair<int, uint64_t>> pooled;  // ptr -> (device, size)
  std::vector<uint64_t> pool_free[64];  // sizes of the pool's free blocks
  uintptr_t next_addr = 0x7f0000000000ull;
  std::atomic<uintptr_t> next_handle{0x1000};
};

State& state() {
  static State* s = [] {
    auto* st = new State();
    if (const char* v = std::getenv("FAKECUDA_DEVICES")) st->devices = std::atoi(v);
    if (const char* v = std::getenv("FAKECUDA_MEM")) st->mem = std::strtoull(v, nullptr, 10);
    parse_fail_scripts(std::getenv("FAKECUDA_FAIL"), st->fail);
    if (const char* v = std::getenv("FAKECUDA_DELAY_US")) {
      for (const auto& item : split(v, ',')) {
        auto parts = split(item, ':');
        int id = parts.size() == 2 ? api_by_name(parts[0]) : -1;
        if (id >= 0) st->delay_us[id] = std::strtoull(parts[1].c_str(), nullptr, 10);
      }
    }
    return st;
  }();
  return *s;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t set_error(cudaError_t r) {
  if (r != cudaSuccess && r != cudaErrorNotReady) t_last_error = r;
  return r;
}

// Scripted failure or delay for this call; cudaSuccess means "behave normally".
// Calls are counted only for APIs that have a script, so that benchmarks against the double
// measure the shim and not contention on a shared counter.
cudaError_t scripted(ApiId id) {
  State& s = state();
  if (s.fail[int(id)].empty() && s.delay_us[int(id)] == 0) return cudaSuccess;
  uint64_t n = s.calls[int(id)].fetch_add(1) + 1;
  if (s.delay_us[int(id)]) std::this_thread::sleep_for(std::chrono::microseconds(s.delay_us[int(id)]));
  return cudaError_t(scripted_code(s.fail[int(id)], n));
}

void* new_handle() { return reinterpret_cast<void*>(state().next_handle.fetch_add(16)); }

cudaError_t allocate(void** out, size_t size) {
  if (out == nullptr) return cudaErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.live[t_device] + s.pool_reserved[t_device] + size > s.mem) {
    *out = nullptr;  // as the real runtime leaves it (docs/dev/validation.md)
    return cudaErrorMemoryAllocation;
  }
  uintptr_t p = s.next_addr;
  s.next_addr += (size + 511) & ~uintptr_t(511);
  if (size == 0) s.next_addr += 512;
  s.allocations[p] = {t_device, size};
  s.live[t_device] += size;
  *out = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

// From the device's pool: what the pool holds free is used first, the rest reserved anew.
cudaError_t allocate_pooled(void** out, size_t size) {
  if (out == nullptr) return cudaErrorInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  const int d = t_device;
  auto& blocks = s.pool_free[d];
  auto best = blocks.end();
  for (auto it = blocks.begin(); it != blocks.end(); ++it) {
    if (*it >= size && (best == blocks.end() || *it < *best)) best = it;
  }
  uint64_t grow = 0;
  if (best != blocks.end()) {
    uint64_t rest = *best - size;
    blocks.erase(best);
    if (rest > 0) blocks.push_back(rest);
  } else {
    grow = size;
  }
  if (s.live[d] + s.pool_reserved[d] + grow > s.mem) {
    *out = nullptr;
    return cudaErrorMemoryAllocation;
  }
  uintptr_t p = s.next_addr;
  s.next_addr += (size + 511) & ~uintptr_t(511);
  if (size == 0) s.next_addr += 512;
  s.pool_reserved[d] += grow;
  s.pool_used[d] += size;
  s.pooled[p] = {d, size};
  *out = reinterpret_cast<void*>(p);
  return cudaSuccess;
}

// Back to the pool, which keeps it reserved.
cudaError_t release_pooled(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pooled.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.pooled.end()) return cudaErrorInvalidValue;
  s.pool_used[it->second.first] -= it->second.second;
  s.pool_free[it->second.first].push_back(it->second.second);
  s.pooled.erase(it);
  return cudaSuccess;
}

cudaMemPool_t pool_of(int device) { return reinterpret_cast<cudaMemPool_t>(uintptr_t(0x9000) + uintptr_t(device) * 16); }

cudaError_t release(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.allocations.end()) return cudaErrorInvalidValue;
  s.live[it->second.first] -= it->second.second;
  s.allocations.erase(it);
  return cudaSuccess;
}

// Events are stamped with a simulated device clock that only the double's "kernels" advance
// (fakecuda_device_work, called by the cuDNN double for each execution), so the times a
// benchmark search measures are exact and do not depend on how busy the test machine is.
std::atomic<uint64_t> g_device_ns{0};

std::unordered_map<cudaEvent_t, uint64_t>& event_times() {
  static auto* m = new std::unordered_map<cudaEvent_t, uint64_t>();
  return *m;
}

void dummy_driver_function() {}

// libcuda.so.1 through a private handle, never linked: its entry-point lookup, opened on the first
// lookup, and the double's own device and memory hooks (absent from another libcuda, the
// toolkit's stub for one), found once a libcuda is loaded.
struct Driver {
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  using Init = CUresult (*)(unsigned int);
  GetProc get_proc = nullptr;
  void (*set_device)(int) = nullptr;
  unsigned long long (*used)(int) = nullptr;
};

void find_driver_hooks(void* handle, Driver* d) {
  d->set_device = reinterpret_cast<void (*)(int)>(dlsym(handle, "fakecuda_set_device"));
  d->used = reinterpret_cast<unsigned long long (*)(int)>(dlsym(handle, "fakecuda_used"));
}

// libcuda.so.1 beside this file, else by name as the real runtime opens it. By path first: a
// sanitizer's dlopen interceptor is the caller glibc sees, so this file's RUNPATH goes unused.
void* open_libcuda() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&dummy_driver_function), &info) != 0 && info.dli_fname != nullptr) {
    std::string path = info.dli_fname;
    path = path.substr(0, path.rfind('/') + 1) + "libcuda.so.1";
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

const Driver& opened_driver() {
  static const Driver d = [] {
    Driver d;
    void* h = open_libcuda();
    if (h == nullptr) return d;
    d.get_proc = reinterpret_cast<Driver::GetProc>(dlsym(h, "cuGetProcAddress_v2"));
    if (auto init = reinterpret_cast<Driver::Init>(dlsym(h, "cuInit"))) init(0);
    find_driver_hooks(h, &d);
    return d;
  }();
  return d;
}

// The driver's hooks when the process already has a libcuda (checked until it has one).
const Driver* loaded_driver() {
  static std::atomic<const Driver*> found{nullptr};
  if (const Driver* d = found.load(std::memory_order_acquire)) return d;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  auto* d = new Driver();
  find_driver_hooks(h, d);
  const Driver* expected = nullptr;
  if (!found.compare_exchange_strong(expected, d, std::memory_order_acq_rel)) {
    delete d;
    return expected;
  }
  return d;
}

uint64_t driver_used(int device) {
  const Driver* d = loaded_driver();
  return d && d->used ? d->used(device) : 0;
}

// Default behaviour: succeed and do nothing. Specializations model what tests depend on.
template <ApiId kSig>
struct Behave {
  template <typename... A>
  static cudaError_t run(A...) {
    return cudaSuccess;
  }
};

template <>
struct Behave<ApiId::cudaMalloc> {
  static cudaError_t run(void** p, size_t size) { return allocate(p, size); }
};
template <>
struct Behave<ApiId::cudaMallocAsync> {
  static cudaError_t run(void** p, size_t size, cudaStream_t) { return allocate_pooled(p, size); }
};
template <>
struct Behave<ApiId::cudaMallocFromPoolAsync> {
  static cudaError_t run(void** p, size_t size, cudaMemPool_t, cudaStream_t) { return allocate_pooled(p, size); }
};
template <>
struct Behave<ApiId::cudaMemPoolGetAttribute> {
  static cudaError_t run(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
    if (value == nullptr) return cudaErrorInvalidValue;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    int d = int((reinterpret_cast<uintptr_t>(pool) - 0x9000) / 16);
    if (d < 0 || d >= 64 || pool != pool_of(d)) return cudaErrorInvalidValue;
    switch (attr) {
      case cudaMemPoolAttrReleaseThreshold: *static_cast<uint64_t*>(value) = UINT64_MAX; break;
      case cudaMemPoolAttrReservedMemCurrent: *static_cast<uint64_t*>(value) = s.pool_reserved[d]; break;
      case cudaMemPoolAttrUsedMemCurrent: *static_cast<uint64_t*>(value) = s.pool_used[d]; break;
      default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaMallocManaged> {
  static cudaError_t run(void** p, size_t size, unsigned) { return allocate(p, size); }
};
template <>
struct Behave<ApiId::cudaMallocPitch> {
  static cudaError_t run(void** p, size_t* pitch, size_t width, size_t height) {
    size_t pt = (width + 511) & ~size_t(511);
    if (pitch) *pitch = pt;
    return allocate(p, pt * height);
  }
};
template <>
struct Behave<ApiId::cudaMalloc3D> {
  static cudaError_t run(cudaPitchedPtr* pp, cudaExtent e) {
    size_t pt = (e.width + 511) & ~size_t(511);
    void* p = nullptr;
    cudaError_t r = allocate(&p, pt * (e.height ? e.height : 1) * (e.depth ? e.depth : 1));
    if (r == cudaSuccess && pp) *pp = cudaPitchedPtr{p, pt, e.width, e.height};
    return r;
  }
};
template <>
struct Behave<ApiId::cudaFree> {
  static cudaError_t run(void* p) { return release(p); }
};
template <>
struct Behave<ApiId::cudaFreeAsync> {
  static cudaError_t run(void* p, cudaStream_t) { return release_pooled(p); }
};
template <>
struct Behave<ApiId::cudaMallocHost> {
  static cudaError_t run(void** p, size_t size) {
    *p = std::malloc(size ? size : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
  }
};
template <>
struct Behave<ApiId::cudaHostAlloc> {
  static cudaError_t run(void** p, size_t size, unsigned) { return Behave<ApiId::cudaMallocHost>::run(p, size); }
};
template <>
struct Behave<ApiId::cudaFreeHost> {
  static cudaError_t run(void* p) {
    std::free(p);
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaMemGetInfo> {
  static cudaError_t run(size_t* free_bytes, size_t* total) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    uint64_t used = s.live[t_device] + s.pool_reserved[t_device] + driver_used(t_device);
    if (free_bytes) *free_bytes = used < s.mem ? s.mem - used : 0;
    if (total) *total = s.mem;
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaSetDevice> {
  static cudaError_t run(int d) {
    if (d < 0 || d >= state().devices) return cudaErrorInvalidDevice;
    t_device = d;
    if (const Driver* drv = loaded_driver(); drv && drv->set_device) drv->set_device(d);
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaGetDevice> {
  static cudaError_t run(int* d) {
    if (d) *d = t_device;
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaGetDeviceCount> {
  static cudaError_t run(int* n) {
    if (n) *n = state().devices;
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaEventCreate> {
  static cudaError_t run(cudaEvent_t* e) {
    *e = static_cast<cudaEvent_t>(new_handle());
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaEventCreateWithFlags> {
  static cudaError_t run(cudaEvent_t* e, unsigned) { return Behave<ApiId::cudaEventCreate>::run(e); }
};
template <>
struct Behave<ApiId::cudaEventRecord> {
  static cudaError_t run(cudaEvent_t e, cudaStream_t) {
    std::lock_guard<std::mutex> lock(state().mu);
    event_times()[e] = g_device_ns.load();
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaEventRecordWithFlags> {
  static cudaError_t run(cudaEvent_t e, cudaStream_t s, unsigned) { return Behave<ApiId::cudaEventRecord>::run(e, s); }
};
template <>
struct Behave<ApiId::cudaEventElapsedTime> {
  static cudaError_t run(float* ms, cudaEvent_t a, cudaEvent_t b) {
    std::lock_guard<std::mutex> lock(state().mu);
    auto& times = event_times();
    if (!times.count(a) || !times.count(b)) return cudaErrorInvalidResourceHandle;
    *ms = float(double(int64_t(times[b] - times[a])) / 1e6);
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaStreamCreate> {
  static cudaError_t run(cudaStream_t* s) {
    *s = static_cast<cudaStream_t>(new_handle());
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaStreamCreateWithFlags> {
  static cudaError_t run(cudaStream_t* s, unsigned) { return Behave<ApiId::cudaStreamCreate>::run(s); }
};
template <>
struct Behave<ApiId::cudaStreamCreateWithPriority> {
  static cudaError_t run(cudaStream_t* s, unsigned, int) { return Behave<ApiId::cudaStreamCreate>::run(s); }
};
template <>
struct Behave<ApiId::cudaGetLastError> {
  static cudaError_t run() {
    cudaError_t r = t_last_error;
    t_last_error = cudaSuccess;
    return r;
  }
};
template <>
struct Behave<ApiId::cudaPeekAtLastError> {
  static cudaError_t run() { return t_last_error; }
};
// Like the real runtime: the driver's answer, or success with a NULL function and the reason in
// the status when the driver has no such function for that version.
template <>
struct Behave<ApiId::cudaGetDriverEntryPointByVersion> {
  static cudaError_t run(const char* sym, void** fn, unsigned version, unsigned long long flags,
                         cudaDriverEntryPointQueryResult* st) {
    if (sym == nullptr || fn == nullptr) return cudaErrorInvalidValue;
    const Driver& d = opened_driver();
    if (d.get_proc == nullptr) {
      *fn = reinterpret_cast<void*>(&dummy_driver_function);
      if (st) *st = cudaDriverEntryPointSuccess;
      return cudaSuccess;
    }
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (d.get_proc(sym, fn, int(version), flags, &status) != CUDA_SUCCESS) *fn = nullptr;
    if (st) {
      *st = status == CU_GET_PROC_ADDRESS_SUCCESS                  ? cudaDriverEntryPointSuccess
            : status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaDriverEntryPointVersionNotSufficent
                                                                   : cudaDriverEntryPointSymbolNotFound;
    }
    return cudaSuccess;
  }
};
// The version-less lookup answers as of the runtime's own version.
template <>
struct Behave<ApiId::cudaGetDriverEntryPoint> {
  static cudaError_t run(const char* sym, void** fn, unsigned long long flags, cudaDriverEntryPointQueryResult* st) {
    return Behave<ApiId::cudaGetDriverEntryPointByVersion>::run(sym, fn, kRuntimeVersion, flags, st);
  }
};
// The device the driver double describes, in the layout of this runtime's cudaDeviceProp (CUDA
// 12's for the .12 build, whichever name the program called).
#if FAKECUDA_RUNTIME_MAJOR == 12
using DeviceProp = cuda12::DeviceProp;
#else
using DeviceProp = cudaDeviceProp;
#endif
template <>
struct Behave<ApiId::cudaGetDeviceProperties> {
  static cudaError_t run(cudaDeviceProp* prop, int d) {
    if (d < 0 || d >= state().devices) return cudaErrorInvalidDevice;
    auto* p = reinterpret_cast<DeviceProp*>(prop);
    std::memset(p, 0, sizeof *p);
    const char* name = std::getenv("FAKECUDA_DEVICE_NAME");
    std::snprintf(p->name, sizeof p->name, "%s", name ? name : "cuprobe test double");
    p->totalGlobalMem = state().mem;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    for (int i = 0; i < 16; ++i) p->uuid.bytes[i] = char(0x10 * d + i);
    p->pciBusID = 0x18 + d;
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaRuntimeGetVersion> {
  static cudaError_t run(int* v) {
    *v = kRuntimeVersion;
    return cudaSuccess;
  }
};
template <>
struct Behave<ApiId::cudaDriverGetVersion> {
  static cudaError_t run(int* v) {
    *v = 13000;
    return cudaSuccess;
  }
};

}  // namespace fake

// cudaGetLastError/cudaPeekAtLastError report the sticky error; they never set it.
#define FAKECUDA_DEFINE(ret, name, sig, params, args, api_flags)                                \
  extern "C" __attribute__((visibility("default"))) ret name params {                         \
    fake::opened_driver();                                                                    \
    if (cudaError_t r = fake::scripted(cuprobe::ApiId::name); r != cudaSuccess) {             \
      return fake::set_error(r);                                                              \
    }                                                                                         \
    cudaError_t r = fake::Behave<cuprobe::ApiId::sig>::run args;                              \
    return (cuprobe::api_static(cuprobe::ApiId::name).flags & cuprobe::trace::kApiError) ? r \
                                                                                         : fake::set_error(r); \
  }
CUPROBE_CUDART_HOOKS(FAKECUDA_DEFINE)

// For tests: how many times the program's calls of `api` reached this library (only counted
// for APIs that FAKECUDA_FAIL or FAKECUDA_DELAY_US name).
// Not hooked by the shim (it asks it for the pool a memory sample reads): the device's pool.
extern "C" __attribute__((visibility("default"))) cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  if (pool == nullptr || device < 0 || device >= fake::state().devices) return cudaErrorInvalidValue;
  *pool = fake::pool_of(device);
  return cudaSuccess;
}

// Not hooked by the shim (the search budget asks it before a deferred search): FAKECUDA_CAPTURING=1
// says every stream is capturing a CUDA graph.
extern "C" __attribute__((visibility("default"))) cudaError_t cudaStreamIsCapturing(cudaStream_t,
                                                                                    cudaStreamCaptureStatus* status) {
  if (status == nullptr) return cudaErrorInvalidValue;
  const char* v = std::getenv("FAKECUDA_CAPTURING");
  *status = v != nullptr && v[0] == '1' ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

extern "C" __attribute__((visibility("default"))) void fakecuda_device_work(unsigned long long ns) {
  fake::g_device_ns += ns;
}

extern "C" __attribute__((visibility("default"))) unsigned long long fakecuda_calls(const char* api) {
  int id = fake::api_by_name(api);
  return id < 0 ? 0 : fake::state().calls[id].load();
}
