// What each CUDA driver call records (driver_hooks.h): one Capture<> specialization per base
// function, in the manner of capture_cudart.h. Allocations name their calling module (caller),
// physical allocations the device they were made on (their event's device), and an entry-point
// lookup hands back a recording wrapper (driver_entry.h).
#pragma once

#include <cuda.h>

#include "driver_entry.h"
#include "hook.h"
#include "resolve.h"

namespace cuprobe::shim {

// The device of a driver call: the one the runtime last reported on this thread, else the
// current context's device (asked of the driver; never of the runtime, see driver_hooks.h).
int driver_device(ThreadState& t);

template <>
struct LibraryTraits<trace::Library::kDriver> {
  static constexpr CUresult kMissing = CUDA_ERROR_NOT_FOUND;
  static constexpr CUresult kProbe = CUDA_ERROR_OUT_OF_MEMORY;  // FaultProbe's "as if it failed"
  static bool ok(CUresult r) { return r == CUDA_SUCCESS; }
  static int device(ThreadState& t) { return driver_device(t); }
  static void on_event() {}
};

inline uint64_t out_dptr(CUresult r, const CUdeviceptr* p) { return (r == CUDA_SUCCESS && p) ? uint64_t(*p) : 0; }

template <>
struct Capture<ApiId::cuMemAlloc_v2> {
  static constexpr const char* kFields = "ptr:p,size:u,caller:p";
  static void after(CallWriter& w, CUresult r, CUdeviceptr* p, size_t size) {
    w.u(out_dptr(r, p));
    w.u(size);
    w.p(caller_of(w.thread()));
  }
};

template <>
struct Capture<ApiId::cuMemFree_v2> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, CUresult, CUdeviceptr p) { w.u(p); }
};

template <>
struct Capture<ApiId::cuMemAllocAsync> {
  static constexpr const char* kFields = "ptr:p,size:u,caller:p";
  static void after(CallWriter& w, CUresult r, CUdeviceptr* p, size_t size, CUstream s) {
    w.u(out_dptr(r, p));
    w.u(size);
    w.p(caller_of(w.thread()));
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cuMemFreeAsync> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, CUresult, CUdeviceptr p, CUstream s) {
    w.u(p);
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cuMemAllocFromPoolAsync> {
  static constexpr const char* kFields = "ptr:p,size:u,pool:p,caller:p";
  static void after(CallWriter& w, CUresult r, CUdeviceptr* p, size_t size, CUmemoryPool pool, CUstream s) {
    w.u(out_dptr(r, p));
    w.u(size);
    w.p(pool);
    w.p(caller_of(w.thread()));
    w.stream(s);
  }
};

template <>
struct Capture<ApiId::cuMemAllocManaged> {
  static constexpr const char* kFields = "ptr:p,size:u,flags:x,caller:p";
  static void after(CallWriter& w, CUresult r, CUdeviceptr* p, size_t size, unsigned int flags) {
    w.u(out_dptr(r, p));
    w.u(size);
    w.u(flags);
    w.p(caller_of(w.thread()));
  }
};

inline const void* out_host(CUresult r, void* const* p) { return (r == CUDA_SUCCESS && p) ? *p : nullptr; }

template <>
struct Capture<ApiId::cuMemAllocHost_v2> {
  static constexpr const char* kFields = "ptr:p,size:u,caller:p";
  static void after(CallWriter& w, CUresult r, void** p, size_t size) {
    w.p(out_host(r, p));
    w.u(size);
    w.p(caller_of(w.thread()));
  }
};

template <>
struct Capture<ApiId::cuMemHostAlloc> {
  static constexpr const char* kFields = "ptr:p,size:u,flags:x,caller:p";
  static void after(CallWriter& w, CUresult r, void** p, size_t size, unsigned int flags) {
    w.p(out_host(r, p));
    w.u(size);
    w.u(flags);
    w.p(caller_of(w.thread()));
  }
};

template <>
struct Capture<ApiId::cuMemFreeHost> {
  static constexpr const char* kFields = "ptr:p";
  static void after(CallWriter& w, CUresult, void* p) { w.p(p); }
};

template <>
struct Capture<ApiId::cuMemAddressReserve> {
  static constexpr const char* kFields = "ptr:p,size:u,alignment:u,addr:p,flags:x,caller:p";
  static void after(CallWriter& w, CUresult r, CUdeviceptr* p, size_t size, size_t alignment, CUdeviceptr addr,
                    unsigned long long flags) {
    w.u(out_dptr(r, p));
    w.u(size);
    w.u(alignment);
    w.u(addr);
    w.u(flags);
    w.p(caller_of(w.thread()));
  }
};

template <>
struct Capture<ApiId::cuMemAddressFree> {
  static constexpr const char* kFields = "ptr:p,size:u";
  static void after(CallWriter& w, CUresult, CUdeviceptr p, size_t size) {
    w.u(p);
    w.u(size);
  }
};

// Physical memory: the event's device is where the memory lives (the allocation's location),
// which need not be the thread's current device.
template <>
struct Capture<ApiId::cuMemCreate> {
  static constexpr const char* kFields = "handle:p,size:u,location_type:i,handle_types:x,caller:p";
  static void after(CallWriter& w, CUresult r, CUmemGenericAllocationHandle* h, size_t size,
                    const CUmemAllocationProp* prop, unsigned long long) {
    w.u(r == CUDA_SUCCESS && h ? uint64_t(*h) : 0);
    w.u(size);
    w.i(prop ? int64_t(prop->location.type) : -1);
    w.u(prop ? uint64_t(prop->requestedHandleTypes) : 0);
    w.p(caller_of(w.thread()));
    if (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) w.device(prop->location.id);
  }
};

template <>
struct Capture<ApiId::cuMemRelease> {
  static constexpr const char* kFields = "handle:p";
  static void after(CallWriter& w, CUresult, CUmemGenericAllocationHandle h) { w.u(h); }
};

template <>
struct Capture<ApiId::cuMemMap> {
  static constexpr const char* kFields = "ptr:p,size:u,offset:u,handle:p";
  static void after(CallWriter& w, CUresult, CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                    unsigned long long) {
    w.u(p);
    w.u(size);
    w.u(offset);
    w.u(h);
  }
};

// Same arguments, same fields as cuMemAddressFree.
template <>
struct Capture<ApiId::cuMemUnmap> : Capture<ApiId::cuMemAddressFree> {};

template <>
struct Capture<ApiId::cuMemSetAccess> {
  static constexpr const char* kFields = "ptr:p,size:u,count:u,access_device:i";
  static void after(CallWriter& w, CUresult, CUdeviceptr p, size_t size, const CUmemAccessDesc* desc, size_t count) {
    w.u(p);
    w.u(size);
    w.u(count);
    w.i(desc && count && desc->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? desc->location.id : -1);
  }
};

template <>
struct Capture<ApiId::cuMemGetInfo_v2> {
  static constexpr const char* kFields = "free:u,total:u";
  static void after(CallWriter& w, CUresult r, size_t* free_bytes, size_t* total) {
    bool ok = r == CUDA_SUCCESS;
    w.u(ok && free_bytes ? *free_bytes : 0);
    w.u(ok && total ? *total : 0);
  }
};

template <>
struct Capture<ApiId::cuGetProcAddress_v2> {
  static constexpr const char* kFields = "symbol:s,fn:p,version:i,flags:x,status:i";
  static void after(CallWriter& w, CUresult r, const char* symbol, void** fn, int version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status) {
    w.u(intern_string(symbol));
    w.p(r == CUDA_SUCCESS && fn ? *fn : nullptr);
    w.i(version);
    w.u(flags);
    w.i(status ? int64_t(*status) : -1);
    if (r == CUDA_SUCCESS && fn != nullptr) *fn = driver_entry_for_lookup(symbol, *fn, version, flags);
  }
};

}  // namespace cuprobe::shim
