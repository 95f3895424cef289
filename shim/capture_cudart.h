// What each CUDA runtime call records beyond the common fields (timestamp, duration, return
// code, device): one Capture<> specialization per base function of cudart_hooks.h. kFields
// names the argument fields in the order after() writes them (encoding in trace_format.h);
// readers learn the names from the ApiInfo records, so adding a field needs no reader change.
// Outputs are read only when the call succeeded. A driver entry-point lookup's capture also hands
// the program a recording wrapper instead of the driver function it found (driver_entry.h).
#pragma once

#include <cuda_runtime_api.h>

#include "driver_entry.h"
#include "hook.h"
#include "mem_sample.h"

namespace cuprobe::shim {

template <>
struct LibraryTraits<trace::Library::kCudart> {
  static constexpr cudaError_t kMissing = cudaErrorSharedObjectSymbolNotFound;
  static constexpr cudaError_t kProbe = cudaErrorMemoryAllocation;  // FaultProbe's "as if it failed"
  static bool ok(cudaError_t r) { return r == cudaSuccess; }
  static int device(ThreadState& t) { return current_device(t); }
  static void on_event() {}
};

inline const void* out_ptr(cudaError_t r, void* const* p) { return (r == cudaSuccess && p) ? *p : nullptr; }

template <>
struct Capture<ApiId::cudaMalloc> {
  static constexpr const char* kFields = "ptr:p,size:u,caller:p";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t size) {
    w.p(out_ptr(r, p));
    w.u(size);
    w.p(caller_of(w.thread()));
  }
};

template <>
struct Capture<ApiId::cudaFree> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, cudaError_t, void* p) { w.p(p); }
};

template <>
struct Capture<ApiId::cudaMallocAsync> {
  static constexpr const char* kFields = "ptr:p,size:u,caller:p";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t size, cudaStream_t s) {
    note_pool_in_use(nullptr);  // the device's current pool
    w.p(out_ptr(r, p));
    w.u(size);
    w.p(caller_of(w.thread()));
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaFreeAsync> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, cudaError_t, void* p, cudaStream_t s) {
    w.p(p);
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaMallocFromPoolAsync> {
  static constexpr const char* kFields = "ptr:p,size:u,pool:p,caller:p";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
    note_pool_in_use(pool);
    w.p(out_ptr(r, p));
    w.u(size);
    w.p(pool);
    w.p(caller_of(w.thread()));
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaMallocManaged> {
  static constexpr const char* kFields = "ptr:p,size:u,flags:x,caller:p";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t size, unsigned int flags) {
    w.p(out_ptr(r, p));
    w.u(size);
    w.u(flags);
    w.p(caller_of(w.thread()));
  }
};

template <>
struct Capture<ApiId::cudaMallocPitch> {
  static constexpr const char* kFields = "ptr:p,size:u,pitch:u,width:u,height:u";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t* pitch, size_t width, size_t height) {
    size_t pt = (r == cudaSuccess && pitch) ? *pitch : 0;
    w.p(out_ptr(r, p));
    w.u(pt != 0 ? pt * height : width * height);
    w.u(pt);
    w.u(width);
    w.u(height);
  }
};

template <>
struct Capture<ApiId::cudaMalloc3D> {
  static constexpr const char* kFields = "ptr:p,size:u,pitch:u,width:u,height:u,depth:u";
  static void after(CallWriter& w, cudaError_t r, cudaPitchedPtr* pp, cudaExtent e) {
    bool ok = r == cudaSuccess && pp != nullptr;
    size_t pitch = ok ? pp->pitch : 0;
    size_t depth = e.depth ? e.depth : 1;
    size_t height = e.height ? e.height : 1;
    w.p(ok ? pp->ptr : nullptr);
    w.u((pitch ? pitch : e.width) * height * depth);
    w.u(pitch);
    w.u(e.width);
    w.u(e.height);
    w.u(e.depth);
  }
};

template <>
struct Capture<ApiId::cudaMallocHost> {
  static constexpr const char* kFields = "ptr:p,size:u";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t size) {
    w.p(out_ptr(r, p));
    w.u(size);
  }
};

template <>
struct Capture<ApiId::cudaHostAlloc> {
  static constexpr const char* kFields = "ptr:p,size:u,flags:x";
  static void after(CallWriter& w, cudaError_t r, void** p, size_t size, unsigned int flags) {
    w.p(out_ptr(r, p));
    w.u(size);
    w.u(flags);
  }
};

template <>
struct Capture<ApiId::cudaFreeHost> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, cudaError_t, void* p) { w.p(p); }
};

template <>
struct Capture<ApiId::cudaHostRegister> {
  static constexpr const char* kFields = "ptr:p,size:u,flags:x";
  static void after(CallWriter& w, cudaError_t, void* p, size_t size, unsigned int flags) {
    w.p(p);
    w.u(size);
    w.u(flags);
  }
};

template <>
struct Capture<ApiId::cudaHostUnregister> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, cudaError_t, void* p) { w.p(p); }
};

template <>
struct Capture<ApiId::cudaMemGetInfo> {
  static constexpr const char* kFields = "free:u,total:u";
  static void after(CallWriter& w, cudaError_t r, size_t* free_bytes, size_t* total) {
    bool ok = r == cudaSuccess;
    w.u(ok && free_bytes ? *free_bytes : 0);
    w.u(ok && total ? *total : 0);
  }
};

// The attributes that are byte counts (cuuint64_t) rather than int flags.
inline bool pool_attr_is_bytes(int attr) { return attr >= int(cudaMemPoolAttrReleaseThreshold); }

template <>
struct Capture<ApiId::cudaMemPoolGetAttribute> {
  static constexpr const char* kFields = "pool:p,attr:i,value:u";
  static void after(CallWriter& w, cudaError_t r, cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
    w.p(pool);
    w.i(int(attr));
    uint64_t v = 0;
    if (r == cudaSuccess && value != nullptr) {
      v = pool_attr_is_bytes(int(attr)) ? *static_cast<const uint64_t*>(value) : uint64_t(*static_cast<const int*>(value));
    }
    w.u(v);
  }
};

template <>
struct Capture<ApiId::cudaSetDevice> {
  static constexpr const char* kFields = "requested:i";
  static void after(CallWriter& w, cudaError_t r, int device) {
    w.i(device);
    if (r == cudaSuccess) {
      w.thread().device = device;
      w.thread().device_probed = 1;
      retarget_counts(w.thread());
    }
  }
};

template <>
struct Capture<ApiId::cudaGetDevice> {
  static constexpr const char* kFields = "current:i";
  static void after(CallWriter& w, cudaError_t r, int* device) {
    bool ok = r == cudaSuccess && device != nullptr;
    w.i(ok ? *device : -1);
    if (ok) {
      w.thread().device = *device;
      w.thread().device_probed = 1;
      retarget_counts(w.thread());
    }
  }
};

template <>
struct Capture<ApiId::cudaGetDeviceCount> {
  static constexpr const char* kFields = "count:i";
  static void after(CallWriter& w, cudaError_t r, int* count) { w.i(r == cudaSuccess && count ? *count : -1); }
};

template <>
struct Capture<ApiId::cudaStreamSynchronize> {
  static constexpr const char* kFields = "";
  static void after(CallWriter& w, cudaError_t, cudaStream_t s) { w.stream(s); }
};

template <>
struct Capture<ApiId::cudaEventSynchronize> {
  static constexpr const char* kFields = "event:p";
  static void after(CallWriter& w, cudaError_t, cudaEvent_t e) { w.p(e); }
};

template <>
struct Capture<ApiId::cudaStreamWaitEvent> {
  static constexpr const char* kFields = "event:p,flags:x";
  static void after(CallWriter& w, cudaError_t, cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    w.stream(s);
    w.p(e);
    w.u(flags);
  }
};

template <>
struct Capture<ApiId::cudaEventQuery> {
  static constexpr const char* kFields = "event:p";
  static void after(CallWriter& w, cudaError_t, cudaEvent_t e) { w.p(e); }
};

template <>
struct Capture<ApiId::cudaStreamQuery> {
  static constexpr const char* kFields = "";
  static void after(CallWriter& w, cudaError_t, cudaStream_t s) { w.stream(s); }
};

template <>
struct Capture<ApiId::cudaEventCreate> {
  static constexpr const char* kFields = "event:p";
  static void after(CallWriter& w, cudaError_t r, cudaEvent_t* e) {
    w.p(r == cudaSuccess && e ? static_cast<const void*>(*e) : nullptr);
  }
};

template <>
struct Capture<ApiId::cudaEventCreateWithFlags> {
  static constexpr const char* kFields = "event:p,flags:x";
  static void after(CallWriter& w, cudaError_t r, cudaEvent_t* e, unsigned int flags) {
    w.p(r == cudaSuccess && e ? static_cast<const void*>(*e) : nullptr);
    w.u(flags);
  }
};

template <>
struct Capture<ApiId::cudaEventRecord> {
  static constexpr const char* kFields = "event:p";
  static void after(CallWriter& w, cudaError_t, cudaEvent_t e, cudaStream_t s) {
    w.p(e);
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaEventRecordWithFlags> {
  static constexpr const char* kFields = "event:p,flags:x";
  static void after(CallWriter& w, cudaError_t, cudaEvent_t e, cudaStream_t s, unsigned int flags) {
    w.p(e);
    w.u(flags);
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaEventElapsedTime> {
  static constexpr const char* kFields = "ms:f,start:p,end:p";
  static void after(CallWriter& w, cudaError_t r, float* ms, cudaEvent_t start, cudaEvent_t end) {
    w.f(r == cudaSuccess && ms ? double(*ms) : -1.0);
    w.p(start);
    w.p(end);
  }
};

// The search budget tells a benchmark search's timed runs by the events around them.
template <BudgetEvent kWhat>
struct BudgetEventSteer {
  static constexpr bool kOn = true;
  template <typename... A>
  static bool before(ThreadState&, cudaError_t*, FaultHit*, A...) {
    return false;
  }
  template <typename... A>
  static void after(ThreadState&, cudaError_t, A...) {
    if (g_budget_on) budget_event(kWhat);
  }
};
template <>
struct Steer<ApiId::cudaEventRecord> : BudgetEventSteer<BudgetEvent::kRecord> {};
template <>
struct Steer<ApiId::cudaEventRecordWithFlags> : BudgetEventSteer<BudgetEvent::kRecord> {};
template <>
struct Steer<ApiId::cudaEventSynchronize> : BudgetEventSteer<BudgetEvent::kSync> {};
template <>
struct Steer<ApiId::cudaEventElapsedTime> : BudgetEventSteer<BudgetEvent::kElapsed> {};

template <>
struct Capture<ApiId::cudaEventDestroy> {
  static constexpr const char* kFields = "event:p";
  static void after(CallWriter& w, cudaError_t, cudaEvent_t e) { w.p(e); }
};

inline const void* out_stream(cudaError_t r, cudaStream_t* s) {
  return r == cudaSuccess && s ? static_cast<const void*>(*s) : nullptr;
}

template <>
struct Capture<ApiId::cudaStreamCreate> {
  static constexpr const char* kFields = "created:p";
  static void after(CallWriter& w, cudaError_t r, cudaStream_t* s) { w.p(out_stream(r, s)); }
};

template <>
struct Capture<ApiId::cudaStreamCreateWithFlags> {
  static constexpr const char* kFields = "created:p,flags:x";
  static void after(CallWriter& w, cudaError_t r, cudaStream_t* s, unsigned int flags) {
    w.p(out_stream(r, s));
    w.u(flags);
  }
};

template <>
struct Capture<ApiId::cudaStreamCreateWithPriority> {
  static constexpr const char* kFields = "created:p,flags:x,priority:i";
  static void after(CallWriter& w, cudaError_t r, cudaStream_t* s, unsigned int flags, int priority) {
    w.p(out_stream(r, s));
    w.u(flags);
    w.i(priority);
  }
};

template <>
struct Capture<ApiId::cudaStreamDestroy> {
  static constexpr const char* kFields = "";
  static void after(CallWriter& w, cudaError_t, cudaStream_t s) { w.stream(s); }
};

// The version-less lookup returns the driver function as of the runtime's own version: 12080
// under a CUDA 12.8 runtime, 13000 under 13.0, whatever this shim was built against. That version
// is recorded (as the ByVersion lookup records the one it was asked for) and decides whether a
// recording wrapper is handed back (driver_entry.h). A runtime that does not say its version is
// taken to be the one the shim was built for.
inline int entry_point_version() {
  int v = cuda_runtime_version();
  return v > 0 ? v : CUDART_VERSION;
}

template <>
struct Capture<ApiId::cudaGetDriverEntryPoint> {
  static constexpr const char* kFields = "symbol:s,fn:p,version:u,flags:x,status:i";
  static void after(CallWriter& w, cudaError_t r, const char* symbol, void** fn, unsigned long long flags,
                    cudaDriverEntryPointQueryResult* status) {
    int version = entry_point_version();
    w.u(intern_string(symbol));
    w.p(out_ptr(r, fn));
    w.u(uint64_t(version));
    w.u(flags);
    w.i(status ? int64_t(*status) : -1);
    if (r == cudaSuccess && fn != nullptr) *fn = driver_entry_for_lookup(symbol, *fn, version, flags);
  }
};

template <>
struct Capture<ApiId::cudaGetDriverEntryPointByVersion> {
  static constexpr const char* kFields = "symbol:s,fn:p,version:u,flags:x,status:i";
  static void after(CallWriter& w, cudaError_t r, const char* symbol, void** fn, unsigned int version,
                    unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
    w.u(intern_string(symbol));
    w.p(out_ptr(r, fn));
    w.u(version);
    w.u(flags);
    w.i(status ? int64_t(*status) : -1);
    if (r == cudaSuccess && fn != nullptr) *fn = driver_entry_for_lookup(symbol, *fn, int(version), flags);
  }
};

template <>
struct Capture<ApiId::cudaMemcpy> {
  static constexpr const char* kFields = "dst:p,src:p,size:u,kind:i";
  static void after(CallWriter& w, cudaError_t, void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
    w.p(dst);
    w.p(src);
    w.u(n);
    w.i(kind);
  }
};

template <>
struct Capture<ApiId::cudaMemcpyAsync> {
  static constexpr const char* kFields = "dst:p,src:p,size:u,kind:i";
  static void after(CallWriter& w, cudaError_t, void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                    cudaStream_t s) {
    w.p(dst);
    w.p(src);
    w.u(n);
    w.i(kind);
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaMemset> {
  static constexpr const char* kFields = "ptr:p,value:i,size:u";
  static void after(CallWriter& w, cudaError_t, void* p, int value, size_t n) {
    w.p(p);
    w.i(value);
    w.u(n);
  }
};

template <>
struct Capture<ApiId::cudaMemsetAsync> {
  static constexpr const char* kFields = "ptr:p,value:i,size:u";
  static void after(CallWriter& w, cudaError_t, void* p, int value, size_t n, cudaStream_t s) {
    w.p(p);
    w.i(value);
    w.u(n);
    w.stream(s);
  }
};

inline void capture_launch(CallWriter& w, const void* func, dim3 grid, dim3 block, size_t smem) {
  w.p(func);
  w.u(grid.x);
  w.u(grid.y);
  w.u(grid.z);
  w.u(block.x);
  w.u(block.y);
  w.u(block.z);
  w.u(smem);
}
inline constexpr const char* kLaunchFields = "func:p,grid_x:u,grid_y:u,grid_z:u,block_x:u,block_y:u,block_z:u,smem:u";

template <>
struct Capture<ApiId::cudaLaunchKernel> {
  static constexpr const char* kFields = kLaunchFields;
  static void after(CallWriter& w, cudaError_t, const void* func, dim3 grid, dim3 block, void**, size_t smem,
                    cudaStream_t s) {
    capture_launch(w, func, grid, block, smem);
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cudaLaunchKernelExC> {
  static constexpr const char* kFields = kLaunchFields;
  static void after(CallWriter& w, cudaError_t, const cudaLaunchConfig_t* config, const void* func, void**) {
    if (config == nullptr) {
      capture_launch(w, func, dim3(0, 0, 0), dim3(0, 0, 0), 0);
      return;
    }
    capture_launch(w, func, config->gridDim, config->blockDim, config->dynamicSmemBytes);
    w.stream(config->stream);
  }
};

template <>
struct Capture<ApiId::__cudaLaunchKernel> {
  static constexpr const char* kFields = kLaunchFields;
  static void after(CallWriter& w, cudaError_t, cudaKernel_t kernel, dim3 grid, dim3 block, void**, size_t smem,
                    cudaStream_t s) {
    capture_launch(w, kernel, grid, block, smem);
    w.stream(s);
  }
};

// Only the device is recorded: cudaDeviceProp's layout differs between CUDA 12 (what
// cudaGetDeviceProperties_v2 fills) and 13, and the shim never reads it.
template <>
struct Capture<ApiId::cudaGetDeviceProperties> {
  static constexpr const char* kFields = "of_device:i";
  static void after(CallWriter& w, cudaError_t, cudaDeviceProp*, int device) { w.i(device); }
};

template <>
struct Capture<ApiId::cudaRuntimeGetVersion> {
  static constexpr const char* kFields = "version:i";
  static void after(CallWriter& w, cudaError_t r, int* v) { w.i(r == cudaSuccess && v ? *v : -1); }
};

template <>
struct Capture<ApiId::cudaDriverGetVersion> {
  static constexpr const char* kFields = "version:i";
  static void after(CallWriter& w, cudaError_t r, int* v) { w.i(r == cudaSuccess && v ? *v : -1); }
};

}  // namespace cuprobe::shim
