// The API table every part of cuprobe shares: one id space over the CUDA runtime, cuDNN, the
// driver, PyTorch's own functions, NCCL's communicator set-up and collectives, and cuBLASLt; each
// API's name, library, role
// flags (trace::ApiFlags) and signature-of id. Expanded from the X-macro lists in
// schema/cuprobe/hooks/; only names and flags are used here, so no CUDA header is needed (the
// shim, which also uses the parameter lists, includes the vendor headers first).
//
// The shim writes each API's entry into every trace (ApiInfo records), so readers of binary
// traces learn flags from the trace itself; readers of JSON Lines, which name APIs, look them
// up here (api_by_name).
#pragma once

#include <cstdint>
#include <cstring>

#include "cuprobe/hooks/cublaslt_hooks.h"
#include "cuprobe/hooks/cudart_hooks.h"
#include "cuprobe/hooks/cudnn_hooks.h"
#include "cuprobe/hooks/driver_hooks.h"
#include "cuprobe/hooks/nccl_hooks.h"
#include "cuprobe/trace_format.h"

namespace cuprobe {

// Short names the tables use for trace::ApiFlags.
namespace hook_flags {
inline constexpr uint64_t DeviceAlloc = trace::kApiDeviceAlloc;
inline constexpr uint64_t DeviceFree = trace::kApiDeviceFree;
inline constexpr uint64_t HostAlloc = trace::kApiHostAlloc;
inline constexpr uint64_t HostFree = trace::kApiHostFree;
inline constexpr uint64_t Sync = trace::kApiSync;
inline constexpr uint64_t Counted = trace::kApiCounted;
inline constexpr uint64_t InitsDevice = trace::kApiInitsDevice;
inline constexpr uint64_t Memcpy = trace::kApiMemcpy;
inline constexpr uint64_t Event = trace::kApiEvent;
inline constexpr uint64_t Stream = trace::kApiStream;
inline constexpr uint64_t Error = trace::kApiError;
inline constexpr uint64_t Faultable = trace::kApiFaultable;
inline constexpr uint64_t Quiet = trace::kApiQuiet;
inline constexpr uint64_t CudnnExec = trace::kApiCudnnExec;
inline constexpr uint64_t AlgoSearch = trace::kApiAlgoSearch;
inline constexpr uint64_t WorkspaceQuery = trace::kApiWorkspaceQuery;
inline constexpr uint64_t Physical = trace::kApiPhysical;
inline constexpr uint64_t VaReserve = trace::kApiVaReserve;
inline constexpr uint64_t VaFree = trace::kApiVaFree;
inline constexpr uint64_t Map = trace::kApiMap;
inline constexpr uint64_t Unmap = trace::kApiUnmap;
inline constexpr uint64_t MemInfo = trace::kApiMemInfo;
inline constexpr uint64_t PoolInfo = trace::kApiPoolInfo;
inline constexpr uint64_t EntryPoint = trace::kApiEntryPoint;
inline constexpr uint64_t OomReport = trace::kApiOomReport;
inline constexpr uint64_t Pooled = trace::kApiPooled;
inline constexpr uint64_t PlanFinalize = trace::kApiPlanFinalize;
inline constexpr uint64_t PlanExecute = trace::kApiPlanExecute;
inline constexpr uint64_t LegacyFind = trace::kApiLegacyFind;
inline constexpr uint64_t LegacyGet = trace::kApiLegacyGet;
inline constexpr uint64_t LegacyConvExec = trace::kApiLegacyConvExec;
inline constexpr uint64_t HandleCreate = trace::kApiHandleCreate;
inline constexpr uint64_t EventTiming = trace::kApiEventTiming;
inline constexpr uint64_t CommInit = trace::kApiCommInit;
inline constexpr uint64_t EventRecord = trace::kApiEventRecord;
inline constexpr uint64_t BlasHeuristic = trace::kApiBlasHeuristic;
inline constexpr uint64_t BlasMatmul = trace::kApiBlasMatmul;
}  // namespace hook_flags

#define CUPROBE_API_ID(ret, name, sig, params, args, flags) name,
enum class ApiId : uint16_t {
  CUPROBE_CUDART_HOOKS(CUPROBE_API_ID)  //
  CUPROBE_CUDNN_HOOKS(CUPROBE_API_ID)   //
  CUPROBE_DRIVER_HOOKS(CUPROBE_API_ID)  //
  CUPROBE_TORCH_HOOKS(CUPROBE_API_ID)   //
  CUPROBE_NCCL_HOOKS(CUPROBE_API_ID)    //
  CUPROBE_CUBLASLT_HOOKS(CUPROBE_API_ID)  //
  kCount
};
#undef CUPROBE_API_ID

inline constexpr int kApiCount = int(ApiId::kCount);

struct ApiStatic {
  const char* name;
  uint64_t flags;
  trace::Library library;
  ApiId sig;  // the API whose declaration (and capture logic) this one shares
};

#define CUPROBE_API_STATIC_CUDART(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint64_t(flags); }(), trace::Library::kCudart, ApiId::sig},
#define CUPROBE_API_STATIC_CUDNN(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint64_t(flags); }(), trace::Library::kCudnn, ApiId::sig},
#define CUPROBE_API_STATIC_DRIVER(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint64_t(flags); }(), trace::Library::kDriver, ApiId::sig},
#define CUPROBE_API_STATIC_TORCH(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint64_t(flags); }(), trace::Library::kTorch, ApiId::sig},
#define CUPROBE_API_STATIC_NCCL(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint64_t(flags); }(), trace::Library::kNccl, ApiId::sig},
#define CUPROBE_API_STATIC_CUBLASLT(ret, name, sig, params, args, flags) \
  ApiStatic{#name, [] { using namespace hook_flags; return uint64_t(flags); }(), trace::Library::kCublasLt, ApiId::sig},
inline constexpr ApiStatic kApis[] = {
    CUPROBE_CUDART_HOOKS(CUPROBE_API_STATIC_CUDART)  //
    CUPROBE_CUDNN_HOOKS(CUPROBE_API_STATIC_CUDNN)    //
    CUPROBE_DRIVER_HOOKS(CUPROBE_API_STATIC_DRIVER)  //
    CUPROBE_TORCH_HOOKS(CUPROBE_API_STATIC_TORCH)    //
    CUPROBE_NCCL_HOOKS(CUPROBE_API_STATIC_NCCL)      //
    CUPROBE_CUBLASLT_HOOKS(CUPROBE_API_STATIC_CUBLASLT)  //
};
#undef CUPROBE_API_STATIC_CUDART
#undef CUPROBE_API_STATIC_CUDNN
#undef CUPROBE_API_STATIC_DRIVER
#undef CUPROBE_API_STATIC_TORCH
#undef CUPROBE_API_STATIC_NCCL
#undef CUPROBE_API_STATIC_CUBLASLT
static_assert(sizeof(kApis) / sizeof(kApis[0]) == kApiCount);

constexpr const ApiStatic& api_static(ApiId id) { return kApis[int(id)]; }

// The table entry of an API named as a trace or a JSON Lines dump names it; nullptr when the
// table has none (an API of another cuprobe version).
inline const ApiStatic* api_by_name(const char* name) {
  for (const ApiStatic& a : kApis) {
    if (std::strcmp(a.name, name) == 0) return &a;
  }
  return nullptr;
}

}  // namespace cuprobe
