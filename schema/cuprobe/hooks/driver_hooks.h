// The one list of CUDA driver functions cuprobe intercepts: the driver's memory API, every way a
// process can allocate device memory without the CUDA runtime (PyTorch's expandable segments,
// NCCL's buffers, CUDA graphs' pools), the memory query, and the driver's own entry-point lookup.
//
// Same entry format as cudart_hooks.h; parameter lists are CUDA 13.0's cuda.h (whose macros name
// the current versions: cuMemAlloc is cuMemAlloc_v2), checked at compile time. The driver is
// never linked: calls reach these wrappers by symbol interposition (programs linked against
// libcuda), through the pointers the shim hands back from cudaGetDriverEntryPoint[ByVersion]
// and cuGetProcAddress (driver_entry.cpp), and through dlsym on a libcuda handle.
//
// CUPROBE_DRIVER_QUERIES says under which name and from which version an entry-point lookup
// returns each function, and whether it is the per-thread-default-stream variant: a lookup that
// asks for an older version gets another function (cuGetProcAddress before 12000 takes four
// arguments), which is handed back unwrapped.
// Driver wrappers never call into the CUDA runtime (no runtime queries for the device, the
// memory or the versions): the runtime makes driver calls while it initialises, holding its own
// lock, and a runtime call from inside one of them waits on that lock for ever (seen on an H200
// with JAX, whose runtime initialises through cuGetProcAddress). InitsDevice here describes the
// device through the driver's own queries only (shim/driver_queries.h), which is how a process
// that never loads the runtime gets its device records.
// Include cuda.h before this file.
#pragma once

#define CUPROBE_DRIVER_HOOKS(X)                                                                          \
  /* device memory */                                                                                    \
  X(CUresult, cuMemAlloc_v2, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize),     \
    DeviceAlloc | InitsDevice | Faultable)                                                           \
  X(CUresult, cuMemFree_v2, cuMemFree_v2, (CUdeviceptr dptr), (dptr), DeviceFree)                        \
  X(CUresult, cuMemAllocAsync, cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), \
    (dptr, bytesize, hStream), DeviceAlloc | Pooled | InitsDevice | Faultable)                       \
  X(CUresult, cuMemAllocAsync_ptsz, cuMemAllocAsync,                                                     \
    (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream),                  \
    DeviceAlloc | Pooled | InitsDevice | Faultable)                                                  \
  X(CUresult, cuMemFreeAsync, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),     \
    DeviceFree | Pooled)                                                                                 \
  X(CUresult, cuMemFreeAsync_ptsz, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream),                 \
    (dptr, hStream), DeviceFree | Pooled)                                                                \
  X(CUresult, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync,                                          \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                          \
    (dptr, bytesize, pool, hStream), DeviceAlloc | Pooled | InitsDevice | Faultable)                 \
  X(CUresult, cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync,                                     \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                          \
    (dptr, bytesize, pool, hStream), DeviceAlloc | Pooled | InitsDevice | Faultable)                 \
  X(CUresult, cuMemAllocManaged, cuMemAllocManaged,                                                      \
    (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags),                  \
    DeviceAlloc | InitsDevice | Faultable)                                                           \
  /* host memory */                                                                                      \
  X(CUresult, cuMemAllocHost_v2, cuMemAllocHost_v2, (void** pp, size_t bytesize), (pp, bytesize),        \
    HostAlloc | Faultable)                                                                               \
  X(CUresult, cuMemHostAlloc, cuMemHostAlloc, (void** pp, size_t bytesize, unsigned int Flags),          \
    (pp, bytesize, Flags), HostAlloc | Faultable)                                                        \
  X(CUresult, cuMemFreeHost, cuMemFreeHost, (void* p), (p), HostFree)                                    \
  /* virtual memory management: reservations, physical allocations, mappings */                          \
  X(CUresult, cuMemAddressReserve, cuMemAddressReserve,                                                  \
    (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),      \
    (ptr, size, alignment, addr, flags), VaReserve)                                                      \
  X(CUresult, cuMemAddressFree, cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size), VaFree)   \
  X(CUresult, cuMemCreate, cuMemCreate,                                                                  \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop,                \
     unsigned long long flags),                                                                          \
    (handle, size, prop, flags), DeviceAlloc | Physical | InitsDevice | Faultable)                                 \
  X(CUresult, cuMemRelease, cuMemRelease, (CUmemGenericAllocationHandle handle), (handle),               \
    DeviceFree | Physical)                                                                               \
  X(CUresult, cuMemMap, cuMemMap,                                                                        \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,                   \
     unsigned long long flags),                                                                          \
    (ptr, size, offset, handle, flags), Map)                                                             \
  X(CUresult, cuMemUnmap, cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size), Unmap)                \
  X(CUresult, cuMemSetAccess, cuMemSetAccess,                                                            \
    (CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count),                           \
    (ptr, size, desc, count), 0)                                                                         \
  /* queries */                                                                                          \
  X(CUresult, cuMemGetInfo_v2, cuMemGetInfo_v2, (size_t * free, size_t* total), (free, total),           \
    MemInfo | InitsDevice)                                                                           \
  X(CUresult, cuGetProcAddress_v2, cuGetProcAddress_v2,                                                  \
    (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,                                  \
     CUdriverProcAddressQueryResult* symbolStatus),                                                      \
    (symbol, pfn, cudaVersion, flags, symbolStatus), EntryPoint)

// Q(api, name an entry-point lookup asks for, first version that returns this function,
//   per-thread-default-stream variant)
#define CUPROBE_DRIVER_QUERIES(Q)                                                                        \
  Q(cuMemAlloc_v2, "cuMemAlloc", 3020, false)                                                            \
  Q(cuMemFree_v2, "cuMemFree", 3020, false)                                                              \
  Q(cuMemAllocAsync, "cuMemAllocAsync", 11020, false)                                                    \
  Q(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, true)                                                \
  Q(cuMemFreeAsync, "cuMemFreeAsync", 11020, false)                                                      \
  Q(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, true)                                                  \
  Q(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, false)                                    \
  Q(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, true)                                \
  Q(cuMemAllocManaged, "cuMemAllocManaged", 6000, false)                                                 \
  Q(cuMemAllocHost_v2, "cuMemAllocHost", 3020, false)                                                    \
  Q(cuMemHostAlloc, "cuMemHostAlloc", 2020, false)                                                       \
  Q(cuMemFreeHost, "cuMemFreeHost", 2000, false)                                                         \
  Q(cuMemAddressReserve, "cuMemAddressReserve", 10020, false)                                            \
  Q(cuMemAddressFree, "cuMemAddressFree", 10020, false)                                                  \
  Q(cuMemCreate, "cuMemCreate", 10020, false)                                                            \
  Q(cuMemRelease, "cuMemRelease", 10020, false)                                                          \
  Q(cuMemMap, "cuMemMap", 10020, false)                                                                  \
  Q(cuMemUnmap, "cuMemUnmap", 10020, false)                                                              \
  Q(cuMemSetAccess, "cuMemSetAccess", 10020, false)                                                      \
  Q(cuMemGetInfo_v2, "cuMemGetInfo", 3020, false)                                                        \
  Q(cuGetProcAddress_v2, "cuGetProcAddress", 12000, false)

// PyTorch's out-of-memory report (c10/core/Allocator.h, exported by libc10.so since 1.13):
// c10::reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated,
// size_t total_reserved, c10::Device device), called by the CUDA caching allocator once it has
// given up on a request (after freeing its cache and retrying), just before it raises
// torch.OutOfMemoryError, whichever allocator backend or driver path failed. There is no header
// to check the signature against; c10::Device is two int8_t (type, index) passed by value.
#define CUPROBE_TORCH_HOOKS(X)                                                                           \
  X(void, _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE,                                           \
    _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE,                                                 \
    (int64_t alloc_size, size_t total_allocated, size_t total_reserved, cuprobe::C10Device device),      \
    (alloc_size, total_allocated, total_reserved, device), OomReport)
