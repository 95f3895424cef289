// Everything derived from the hook tables that the shim, the test doubles and the tests share:
// the ApiId enumeration (one id space over all libraries), each API's library, flags and
// signature-of id, and the slots of kinds that are counted rather than recorded.
//
// The tables themselves are the X-macro lists in cudart_hooks.h (and, per library, beside it).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdint.h>

#include "cuprobe/trace_format.h"
#include "cudart_internal.h"
#include "cudart_hooks.h"
#include "cudnn_hooks.h"
#include "driver_hooks.h"

namespace cuprobe {

// c10::Device as PyTorch passes it by value (c10/core/Device.h): device type, then index.
struct C10Device {
  int8_t type;
  int8_t index;
};

// Short names the tables use for trace::ApiFlags.
namespace hook_flags {
inline constexpr uint32_t DeviceAlloc = trace::kApiDeviceAlloc;
inline constexpr uint32_t DeviceFree = trace::kApiDeviceFree;
inline constexpr uint32_t HostAlloc = trace::kApiHostAlloc;
inline constexpr uint32_t HostFree = trace::kApiHostFree;
inline constexpr uint32_t Sync = trace::kApiSync;
inline constexpr uint32_t Counted = trace::kApiCounted;
inline constexpr uint32_t InitsDevice = trace::kApiInitsDevice;
inline constexpr uint32_t Memcpy = trace::kApiMemcpy;
inline constexpr uint32_t Event = trace::kApiEvent;
inline constexpr uint32_t Stream = trace::kApiStream;
inline constexpr uint32_t Error = trace::kApiError;
inline constexpr uint32_t Faultable = trace::kApiFaultable;
inline constexpr uint32_t Quiet = trace::kApiQuiet;
inline constexpr uint32_t CudnnExec = trace::kApiCudnnExec;
inline constexpr uint32_t AlgoSearch = trace::kApiAlgoSearch;
inline constexpr uint32_t WorkspaceQuery = trace::kApiWorkspaceQuery;
inline constexpr uint32_t Physical = trace::kApiPhysical;
inline constexpr uint32_t VaReserve = trace::kApiVaReserve;
inline constexpr uint32_t VaFree = trace::kApiVaFree;
inline constexpr uint32_t Map = trace::kApiMap;
inline constexpr uint32_t Unmap = trace::kApiUnmap;
inline constexpr uint32_t MemInfo = trace::kApiMemInfo;
inline constexpr uint32_t EntryPoint = trace::kApiEntryPoint;
inline constexpr uint32_t OomReport = trace::kApiOomReport;
inline constexpr uint32_t Pooled = trace::kApiPooled;
}  // namespace hook_flags

#define CUPROBE_API_ID(ret, name, sig, params, args, flags) name,
enum class ApiId : uint16_t {
  CUPROBE_CUDART_HOOKS(CUPROBE_API_ID)  //
  CUPROBE_CUDNN_HOOKS(CUPROBE_API_ID)   //
  CUPROBE_DRIVER_HOOKS(CUPROBE_API_ID)  //
  CUPROBE_TORCH_HOOKS(CUPROBE_API_ID)   //
  kCount
};
#undef CUPROBE_API_ID

inline constexpr int kApiCount = int(ApiId::kCount);

struct ApiStatic {
  const char* name;
  uint32_t flags;
  trace::Library library;
  ApiId sig;  // the API whose declaration (and capture logic) this one shares
};

#define CUPROBE_API_STATIC_CUDART(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint32_t(flags); }(), trace::Library::kCudart, ApiId::sig},
#define CUPROBE_API_STATIC_CUDNN(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint32_t(flags); }(), trace::Library::kCudnn, ApiId::sig},
#define CUPROBE_API_STATIC_DRIVER(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint32_t(flags); }(), trace::Library::kDriver, ApiId::sig},
#define CUPROBE_API_STATIC_TORCH(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint32_t(flags); }(), trace::Library::kTorch, ApiId::sig},
inline constexpr ApiStatic kApis[] = {
    CUPROBE_CUDART_HOOKS(CUPROBE_API_STATIC_CUDART)  //
    CUPROBE_CUDNN_HOOKS(CUPROBE_API_STATIC_CUDNN)    //
    CUPROBE_DRIVER_HOOKS(CUPROBE_API_STATIC_DRIVER)  //
    CUPROBE_TORCH_HOOKS(CUPROBE_API_STATIC_TORCH)    //
};
#undef CUPROBE_API_STATIC_CUDART
#undef CUPROBE_API_STATIC_CUDNN
#undef CUPROBE_API_STATIC_DRIVER
#undef CUPROBE_API_STATIC_TORCH
static_assert(sizeof(kApis) / sizeof(kApis[0]) == kApiCount);

constexpr const ApiStatic& api_static(ApiId id) { return kApis[int(id)]; }

// How an entry-point lookup names each driver function (CUPROBE_DRIVER_QUERIES): the shim hands
// out wrappers by it, and the driver test double answers lookups by it.
struct DriverQuery {
  ApiId api;
  const char* name;  // as cuGetProcAddress takes it: "cuMemAlloc" for cuMemAlloc_v2
  int min_version;   // the first version for which the lookup returns this function
  bool per_thread;   // the per-thread-default-stream variant
};
#define CUPROBE_DRIVER_QUERY(api, name, version, ptsz) DriverQuery{ApiId::api, name, version, ptsz},
inline constexpr DriverQuery kDriverQueries[] = {CUPROBE_DRIVER_QUERIES(CUPROBE_DRIVER_QUERY)};
#undef CUPROBE_DRIVER_QUERY
#define CUPROBE_ONE(...) +1
static_assert(sizeof(kDriverQueries) / sizeof(kDriverQueries[0]) == 0 CUPROBE_DRIVER_HOOKS(CUPROBE_ONE),
              "driver_hooks.h: every driver hook needs a line in CUPROBE_DRIVER_QUERIES");
#undef CUPROBE_ONE

// Counted APIs get consecutive rows of each chunk's per-device count table, quiet APIs
// consecutive slots of its plain count table, both in table order.
inline constexpr int kNoCountSlot = -1;
constexpr uint32_t slot_class(uint32_t flags) { return flags & (trace::kApiCounted | trace::kApiQuiet); }
constexpr int count_slot(ApiId id) {
  uint32_t cls = slot_class(kApis[int(id)].flags);
  if (cls == 0) return kNoCountSlot;
  int slot = 0;
  for (int i = 0; i < int(id); ++i) slot += slot_class(kApis[i].flags) == cls ? 1 : 0;
  return slot;
}
constexpr int apis_with(uint32_t flag) {
  int n = 0;
  for (const auto& a : kApis) n += (a.flags & flag) ? 1 : 0;
  return n;
}
static_assert(apis_with(trace::kApiCounted) <= trace::kCountSlots, "raise trace::kCountSlots");
static_assert(apis_with(trace::kApiQuiet) <= trace::kQuietSlots, "raise trace::kQuietSlots");
static_assert(apis_with(trace::kApiCounted | trace::kApiQuiet) ==
                  apis_with(trace::kApiCounted) + apis_with(trace::kApiQuiet),
              "an API is either counted or quiet");

constexpr int field_count(const char* fields) {
  if (fields == nullptr || *fields == 0) return 0;
  int n = 1;
  for (const char* p = fields; *p; ++p) n += (*p == ',') ? 1 : 0;
  return n;
}

}  // namespace cuprobe
