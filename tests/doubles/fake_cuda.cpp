// Test double of the CUDA driver, libcuda.so.1 (same soname, unversioned symbols like the real
// one), generated from the shim's driver hook table (driver_hooks.h) so that every hooked
// function exists here with cuda.h's signature. Built twice: complete, and without cuMemCreate
// (fake_cuda_partial.map) for the missing-function path.
//
// Behaviour, controlled through the environment like the runtime double (fake_cudart.cpp):
//   FAKECUDA_DEVICES=N     device count (default 2): valid locations of physical memory
//   FAKECUDA_MEM=BYTES     memory per device (default 80 GiB); cuMemAlloc*, cuMemCreate beyond it
//                          fail with CUDA_ERROR_OUT_OF_MEMORY
//   FAKECUDA_FAIL=API:CODE[:NTH[:TIMES]],...   scripted failures (fake_script.h)
// Memory is accounted per device: cuMemAlloc* on the calling thread's device (cuCtxGetDevice,
// set by fakecuda_set_device; default 0), cuMemCreate on prop->location.id, given back by the
// frees and by cuMemRelease (physical memory that is still mapped when released is given back at
// its last unmap, as the driver does). cuMemAddressReserve hands out distinct ranges; cuMemMap,
// cuMemUnmap and cuMemSetAccess check their ranges against reservations and mappings. A failed
// allocation leaves its output as an H200's driver does: *dptr 0 (cuMemAlloc*), *pp NULL
// (cuMemAllocHost, cuMemHostAlloc), *handle and *ptr untouched (cuMemCreate, cuMemAddressReserve).
//
// Device queries (not hooked; the shim describes devices with them, driver_queries.h) answer
// only after cuInit, as the real driver's do (CUDA_ERROR_NOT_INITIALIZED before): device d is
// named FAKECUDA_DEVICE_NAME (default "cuprobe test double"), has FAKECUDA_MEM bytes, compute
// capability 9.0, 132 multiprocessors, UUID bytes 0x10*d+i and PCI address 0000:(0x18+d):00.0;
// cuDriverGetVersion says 13000 (a CUDA 13.0 driver, which runs CUDA 12 runtimes too).
//
// cuGetProcAddress_v2 answers for CUPROBE_DRIVER_QUERIES' names and cuCtxGetDevice, with
// this library's own functions: the per-thread variant for flag 2 where one exists; for a version
// older than the function's, the older function (a dummy here) where one existed ("cuMemAlloc"
// before 3020), else CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT. A function this copy does not
// export is not found.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api.h"
#include "fake_script.h"

#define FAKECUDA_EXPORT extern "C" __attribute__((visibility("default")))

#define FAKECUDA_DECLARE(ret, name, sig, params, args, flags) FAKECUDA_EXPORT ret name params;
CUPROBE_DRIVER_HOOKS(FAKECUDA_DECLARE)
#undef FAKECUDA_DECLARE
FAKECUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device);

namespace fake {

using cuprobe::ApiId;
using cuprobe::kApiCount;

constexpr int kMaxDevices = 64;
constexpr uint64_t kGranularity = 2ull << 20;  // cuMemGetAllocationGranularity's minimum on an H200

struct Physical {
  int device;
  uint64_t size;
  int mappings;
  bool released;
};

struct Mapping {
  uint64_t size;
  CUmemGenericAllocationHandle handle;
};

struct State {
  int devices = 2;
  uint64_t mem = 80ull << 30;
  std::string device_name = "cuprobe test double";
  std::atomic<bool> initialised{false};
  std::vector<Script> fail[kApiCount];
  std::atomic<uint64_t> calls[kApiCount] = {};
  std::mutex mu;
  uint64_t live[kMaxDevices] = {};
  std::unordered_map<CUdeviceptr, std::pair<int, uint64_t>> allocations;  // ptr -> (device, size)
  std::set<void*> host;
  std::unordered_map<CUmemGenericAllocationHandle, Physical> physical;
  std::map<CUdeviceptr, uint64_t> reserved;  // start -> size
  std::map<CUdeviceptr, Mapping> mapped;     // start -> mapping
  CUdeviceptr next_addr = 0x7e0000000000ull;
  CUdeviceptr next_va = 0x600000000000ull;
  CUmemGenericAllocationHandle next_handle = 0x5000;
};

State& state() {
  static State* s = [] {
    auto* st = new State();
    if (const char* v = std::getenv("FAKECUDA_DEVICES")) st->devices = std::atoi(v);
    if (st->devices < 1 || st->devices > kMaxDevices) st->devices = 2;
    if (const char* v = std::getenv("FAKECUDA_MEM")) st->mem = std::strtoull(v, nullptr, 10);
    if (const char* v = std::getenv("FAKECUDA_DEVICE_NAME")) st->device_name = v;
    parse_fail_scripts(std::getenv("FAKECUDA_FAIL"), st->fail);
    return st;
  }();
  return *s;
}

thread_local int t_device = 0;

// Scripted failure for this call; CUDA_SUCCESS means "behave normally". Only scripted APIs count.
CUresult scripted(ApiId id) {
  State& s = state();
  if (s.fail[int(id)].empty()) return CUDA_SUCCESS;
  return CUresult(scripted_code(s.fail[int(id)], s.calls[int(id)].fetch_add(1) + 1));
}

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

CUresult allocate(CUdeviceptr* out, size_t size) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = 0;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.live[t_device] + size > s.mem) return CUDA_ERROR_OUT_OF_MEMORY;
  CUdeviceptr p = s.next_addr;
  s.next_addr += round_up(size, 512);
  s.allocations[p] = {t_device, size};
  s.live[t_device] += size;
  *out = p;
  return CUDA_SUCCESS;
}

CUresult release(CUdeviceptr p) {
  if (p == 0) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  s.live[it->second.first] -= it->second.second;
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult host_allocate(void** out, size_t size) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = std::malloc(size ? size : 1);
  if (*out == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.host.insert(*out);
  return CUDA_SUCCESS;
}

// The reservation holding [p, p + size), or reserved.end().
std::map<CUdeviceptr, uint64_t>::iterator reservation_of(State& s, CUdeviceptr p, uint64_t size) {
  auto it = s.reserved.upper_bound(p);
  if (it == s.reserved.begin()) return s.reserved.end();
  --it;
  return p + size <= it->first + it->second ? it : s.reserved.end();
}

bool overlaps_mapping(State& s, CUdeviceptr p, uint64_t size) {
  auto it = s.mapped.lower_bound(p);
  if (it != s.mapped.end() && it->first < p + size) return true;
  if (it == s.mapped.begin()) return false;
  --it;
  return it->first + it->second.size > p;
}

// True when mappings cover [p, p + size) without a gap.
bool fully_mapped(State& s, CUdeviceptr p, uint64_t size) {
  CUdeviceptr at = p;
  auto it = s.mapped.upper_bound(p);
  if (it == s.mapped.begin()) return false;
  --it;
  for (; it != s.mapped.end() && at < p + size; ++it) {
    if (it->first > at || it->first + it->second.size <= at) return false;
    at = it->first + it->second.size;
  }
  return at >= p + size;
}

void give_back(State& s, CUmemGenericAllocationHandle h) {
  auto it = s.physical.find(h);
  s.live[it->second.device] -= it->second.size;
  s.physical.erase(it);
}

// The function a lookup of an older version gets in place of a _v2 (cuMemAlloc before 3020):
// a different function, which no tracer wraps.
CUresult legacy_function() { return CUDA_ERROR_NOT_SUPPORTED; }

// Default behaviour: succeed and do nothing. Specializations model what tests depend on.
template <ApiId kSig>
struct Behave {
  template <typename... A>
  static CUresult run(A...) {
    return CUDA_SUCCESS;
  }
};

template <>
struct Behave<ApiId::cuMemAlloc_v2> {
  static CUresult run(CUdeviceptr* p, size_t size) { return allocate(p, size); }
};
template <>
struct Behave<ApiId::cuMemAllocAsync> {
  static CUresult run(CUdeviceptr* p, size_t size, CUstream) { return allocate(p, size); }
};
template <>
struct Behave<ApiId::cuMemAllocFromPoolAsync> {
  static CUresult run(CUdeviceptr* p, size_t size, CUmemoryPool, CUstream) { return allocate(p, size); }
};
template <>
struct Behave<ApiId::cuMemAllocManaged> {
  static CUresult run(CUdeviceptr* p, size_t size, unsigned) { return allocate(p, size); }
};
template <>
struct Behave<ApiId::cuMemFree_v2> {
  static CUresult run(CUdeviceptr p) { return release(p); }
};
template <>
struct Behave<ApiId::cuMemFreeAsync> {
  static CUresult run(CUdeviceptr p, CUstream) { return release(p); }
};
template <>
struct Behave<ApiId::cuMemAllocHost_v2> {
  static CUresult run(void** p, size_t size) { return host_allocate(p, size); }
};
template <>
struct Behave<ApiId::cuMemHostAlloc> {
  static CUresult run(void** p, size_t size, unsigned) { return host_allocate(p, size); }
};
template <>
struct Behave<ApiId::cuMemFreeHost> {
  static CUresult run(void* p) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.host.erase(p) == 0) return CUDA_ERROR_INVALID_VALUE;
    std::free(p);
    return CUDA_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cuMemAddressReserve> {
  static CUresult run(CUdeviceptr* p, size_t size, size_t alignment, CUdeviceptr, unsigned long long) {
    if (p == nullptr || size == 0 || size % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    CUdeviceptr start = round_up(s.next_va, alignment > kGranularity ? alignment : kGranularity);
    s.next_va = start + size + kGranularity;  // a guard gap: ranges never touch
    s.reserved[start] = size;
    *p = start;
    return CUDA_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cuMemAddressFree> {
  static CUresult run(CUdeviceptr p, size_t size) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.reserved.find(p);
    if (it == s.reserved.end() || it->second != size || overlaps_mapping(s, p, size)) return CUDA_ERROR_INVALID_VALUE;
    s.reserved.erase(it);
    return CUDA_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cuMemCreate> {
  static CUresult run(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp* prop,
                      unsigned long long flags) {
    if (h == nullptr || prop == nullptr || flags != 0 || size == 0 || size % kGranularity != 0 ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    State& s = state();
    int d = prop->location.id;
    if (d < 0 || d >= s.devices) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.live[d] + size > s.mem) return CUDA_ERROR_OUT_OF_MEMORY;
    *h = s.next_handle++;
    s.physical[*h] = Physical{d, size, 0, false};
    s.live[d] += size;
    return CUDA_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cuMemRelease> {
  static CUresult run(CUmemGenericAllocationHandle h) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.physical.find(h);
    if (it == s.physical.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
    it->second.released = true;
    if (it->second.mappings == 0) give_back(s, h);
    return CUDA_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cuMemMap> {
  static CUresult run(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                      unsigned long long flags) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto phys = s.physical.find(h);
    if (flags != 0 || size == 0 || phys == s.physical.end() || phys->second.released ||
        offset + size > phys->second.size || reservation_of(s, p, size) == s.reserved.end() ||
        overlaps_mapping(s, p, size)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    s.mapped[p] = Mapping{size, h};
    phys->second.mappings++;
    return CUDA_SUCCESS;
  }
};
// Unmaps every mapping inside [p, p + size), which must start at p and leave nothing half mapped.
template <>
struct Behave<ApiId::cuMemUnmap> {
  static CUresult run(CUdeviceptr p, size_t size) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto first = s.mapped.find(p);
    if (first == s.mapped.end()) return CUDA_ERROR_INVALID_VALUE;
    auto last = first;
    while (last != s.mapped.end() && last->first < p + size) {
      if (last->first + last->second.size > p + size) return CUDA_ERROR_INVALID_VALUE;
      ++last;
    }
    for (auto it = first; it != last;) {
      Physical& phys = s.physical[it->second.handle];
      if (--phys.mappings == 0 && phys.released) give_back(s, it->second.handle);
      it = s.mapped.erase(it);
    }
    return CUDA_SUCCESS;
  }
};
template <>
struct Behave<ApiId::cuMemSetAccess> {
  static CUresult run(CUdeviceptr p, size_t size, const CUmemAccessDesc* desc, size_t count) {
    State& s = state();
    if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      if (desc[i].location.id < 0 || desc[i].location.id >= s.devices) return CUDA_ERROR_INVALID_DEVICE;
    }
    std::lock_guard<std::mutex> lock(s.mu);
    return fully_mapped(s, p, size) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
};
template <>
struct Behave<ApiId::cuMemGetInfo_v2> {
  static CUresult run(size_t* free_bytes, size_t* total) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (free_bytes) *free_bytes = s.live[t_device] < s.mem ? s.mem - s.live[t_device] : 0;
    if (total) *total = s.mem;
    return CUDA_SUCCESS;
  }
};

// This copy's exported function for `api` (nullptr when its version script leaves it out).
void* exported(ApiId api, void* fn) {
  Dl_info info;
  if (dladdr(fn, &info) == 0 || info.dli_sname == nullptr) return nullptr;
  return std::strcmp(info.dli_sname, cuprobe::api_static(api).name) == 0 ? fn : nullptr;
}

void* address_of(ApiId api) {
  switch (api) {
#define FAKECUDA_ADDRESS(ret, name, sig, params, args, flags) \
  case ApiId::name:                                           \
    return exported(api, reinterpret_cast<void*>(&::name));
    CUPROBE_DRIVER_HOOKS(FAKECUDA_ADDRESS)
#undef FAKECUDA_ADDRESS
    default:
      return nullptr;
  }
}

CUresult get_proc_address(const char* symbol, void** fn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  *fn = nullptr;
  if (std::strcmp(symbol, "cuCtxGetDevice") == 0 && version >= 2000) {
    *fn = reinterpret_cast<void*>(&cuCtxGetDevice);
  } else {
    const cuprobe::DriverQuery* plain = nullptr;
    const cuprobe::DriverQuery* per_thread = nullptr;
    for (const cuprobe::DriverQuery& q : cuprobe::kDriverQueries) {
      if (std::strcmp(q.name, symbol) == 0) (q.per_thread ? per_thread : plain) = &q;
    }
    const cuprobe::DriverQuery* q =
        (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && per_thread ? per_thread : plain;
    if (q != nullptr && version >= q->min_version) {
      *fn = address_of(q->api);
    } else if (q != nullptr) {
      const char* name = cuprobe::api_static(q->api).name;
      size_t n = std::strlen(name);
      if (n > 3 && std::strcmp(name + n - 3, "_v2") == 0) {
        *fn = reinterpret_cast<void*>(&legacy_function);
      } else {
        st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      }
    }
  }
  if (*fn != nullptr) st = CU_GET_PROC_ADDRESS_SUCCESS;
  if (status) *status = st;
  return *fn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

template <>
struct Behave<ApiId::cuGetProcAddress_v2> {
  static CUresult run(const char* symbol, void** fn, int version, cuuint64_t flags,
                      CUdriverProcAddressQueryResult* status) {
    return get_proc_address(symbol, fn, version, flags, status);
  }
};

}  // namespace fake

#define FAKECUDA_DEFINE(ret, name, sig, params, args, api_flags)                        \
  FAKECUDA_EXPORT ret name params {                                                     \
    if (CUresult r = fake::scripted(cuprobe::ApiId::name); r != CUDA_SUCCESS) return r; \
    return fake::Behave<cuprobe::ApiId::sig>::run args;                                 \
  }
CUPROBE_DRIVER_HOOKS(FAKECUDA_DEFINE)
#undef FAKECUDA_DEFINE

// Not hooked by cuprobe: the shim asks it for the device of driver calls.
FAKECUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = fake::t_device;
  return CUDA_SUCCESS;
}

// Device queries and initialisation: not hooked by cuprobe, asked by the shim itself.
namespace fake {
CUresult checked_device(CUdevice dev) {
  State& s = state();
  if (!s.initialised.load()) return CUDA_ERROR_NOT_INITIALIZED;
  return dev >= 0 && dev < s.devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
}  // namespace fake

FAKECUDA_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fake::state().initialised = true;
  return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = fake::checked_device(ordinal); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = fake::checked_device(dev); r != CUDA_SUCCESS) return r;
  std::snprintf(name, size_t(len), "%s", fake::state().device_name.c_str());
  return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = fake::checked_device(dev); r != CUDA_SUCCESS) return r;
  *bytes = fake::state().mem;
  return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = fake::checked_device(dev); r != CUDA_SUCCESS) return r;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = char(0x10 * dev + i);
  return CUDA_SUCCESS;
}

// The pre-MIG function: the same UUID here (no MIG instances). cuda.h renames cuDeviceGetUuid to
// _v2, so the old name is given by its symbol.
FAKECUDA_EXPORT CUresult fakecuda_uuid_v1(CUuuid* uuid, CUdevice dev) __asm__("cuDeviceGetUuid");
FAKECUDA_EXPORT CUresult fakecuda_uuid_v1(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

FAKECUDA_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice dev) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = fake::checked_device(dev); r != CUDA_SUCCESS) return r;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = 0x18 + dev; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// For tests and the runtime double: make `device` the calling thread's current one (what
// cudaSetDevice does to the driver), and the bytes in use on a device.
FAKECUDA_EXPORT void fakecuda_set_device(int device) {
  if (device >= 0 && device < fake::kMaxDevices) fake::t_device = device;
}

FAKECUDA_EXPORT unsigned long long fakecuda_used(int device) {
  if (device < 0 || device >= fake::kMaxDevices) return 0;
  fake::State& s = fake::state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.live[device];
}
