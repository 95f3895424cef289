// The one list of CUDA runtime functions cuprobe intercepts.
//
// Each entry: X(return type, exported name, signature-of, (parameters), (arguments), flags).
// Include cuda_runtime_api.h and cudart_internal.h before this file.
// "signature-of" names the function whose declaration in cuda_runtime_api.h the entry must
// match; it differs from the exported name for the per-thread-default-stream variants
// (_ptsz/_ptds), which the header does not declare unless CUDA_API_PER_THREAD_DEFAULT_STREAM is
// set, and for CUDA 12's _v2 names that CUDA 13 dropped (same parameters, checked against the
// 13 function they became). It also selects the capture logic (capture_cudart.h), so a variant records exactly what
// its base function records.
//
// This list is expanded into: the ApiId enum, the real-function slots and name table
// (shim/cudart_wrappers.cpp), the exported wrappers, the ApiInfo records written into every
// trace, and the test doubles libcudart.so.13 and libcudart.so.12 (tests/doubles/). Functions
// whose ABI differs between CUDA 12 and 13 are listed in docs/shim.md ("CUDA 12 and 13"). Every wrapper's type is checked
// against the vendor header at compile time.
//
// Flags are cuprobe::trace::ApiFlags without the kApi prefix.
#pragma once

#define CUPROBE_CUDART_HOOKS(X)                                                                   \
  /* device memory */                                                                             \
  X(cudaError_t, cudaMalloc, cudaMalloc, (void** devPtr, size_t size), (devPtr, size),            \
    DeviceAlloc | InitsDevice | Faultable)                                                        \
  X(cudaError_t, cudaFree, cudaFree, (void* devPtr), (devPtr), DeviceFree)                        \
  X(cudaError_t, cudaMallocAsync, cudaMallocAsync,                                                \
    (void** devPtr, size_t size, cudaStream_t hStream), (devPtr, size, hStream),                  \
    DeviceAlloc | Pooled | InitsDevice | Faultable)                                               \
  X(cudaError_t, cudaMallocAsync_ptsz, cudaMallocAsync,                                           \
    (void** devPtr, size_t size, cudaStream_t hStream), (devPtr, size, hStream),                  \
    DeviceAlloc | Pooled | InitsDevice | Faultable)                                               \
  X(cudaError_t, cudaFreeAsync, cudaFreeAsync, (void* devPtr, cudaStream_t hStream),              \
    (devPtr, hStream), DeviceFree | Pooled)                                                       \
  X(cudaError_t, cudaFreeAsync_ptsz, cudaFreeAsync, (void* devPtr, cudaStream_t hStream),         \
    (devPtr, hStream), DeviceFree | Pooled)                                                       \
  X(cudaError_t, cudaMallocFromPoolAsync, cudaMallocFromPoolAsync,                                \
    (void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),                        \
    (ptr, size, memPool, stream), DeviceAlloc | Pooled | InitsDevice | Faultable)                 \
  X(cudaError_t, cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync,                           \
    (void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),                        \
    (ptr, size, memPool, stream), DeviceAlloc | Pooled | InitsDevice | Faultable)                 \
  X(cudaError_t, cudaMallocManaged, cudaMallocManaged,                                            \
    (void** devPtr, size_t size, unsigned int flags), (devPtr, size, flags),                      \
    DeviceAlloc | InitsDevice | Faultable)                                                        \
  X(cudaError_t, cudaMallocPitch, cudaMallocPitch,                                                \
    (void** devPtr, size_t* pitch, size_t width, size_t height), (devPtr, pitch, width, height),  \
    DeviceAlloc | InitsDevice | Faultable)                                                        \
  X(cudaError_t, cudaMalloc3D, cudaMalloc3D,                                                      \
    (struct cudaPitchedPtr * pitchedDevPtr, struct cudaExtent extent), (pitchedDevPtr, extent),   \
    DeviceAlloc | InitsDevice | Faultable)                                                        \
  /* host memory */                                                                               \
  X(cudaError_t, cudaMallocHost, cudaMallocHost, (void** ptr, size_t size), (ptr, size),          \
    HostAlloc | Faultable)                                                                        \
  X(cudaError_t, cudaHostAlloc, cudaHostAlloc, (void** pHost, size_t size, unsigned int flags),   \
    (pHost, size, flags), HostAlloc | Faultable)                                                  \
  X(cudaError_t, cudaFreeHost, cudaFreeHost, (void* ptr), (ptr), HostFree)                        \
  X(cudaError_t, cudaHostRegister, cudaHostRegister,                                              \
    (void* ptr, size_t size, unsigned int flags), (ptr, size, flags), HostAlloc)                  \
  X(cudaError_t, cudaHostUnregister, cudaHostUnregister, (void* ptr), (ptr), HostFree)            \
  X(cudaError_t, cudaMemGetInfo, cudaMemGetInfo, (size_t * free, size_t* total), (free, total),   \
    MemInfo | InitsDevice)                                                                        \
  X(cudaError_t, cudaMemPoolGetAttribute, cudaMemPoolGetAttribute,                                \
    (cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void* value), (memPool, attr, value),      \
    PoolInfo)                                                                                     \
  /* devices */                                                                                   \
  X(cudaError_t, cudaSetDevice, cudaSetDevice, (int device), (device), InitsDevice)               \
  X(cudaError_t, cudaGetDevice, cudaGetDevice, (int* device), (device), Counted)                  \
  X(cudaError_t, cudaGetDeviceCount, cudaGetDeviceCount, (int* count), (count), 0)                \
  /* synchronization */                                                                           \
  X(cudaError_t, cudaDeviceSynchronize, cudaDeviceSynchronize, (void), (), Sync | Faultable)                  \
  X(cudaError_t, cudaStreamSynchronize, cudaStreamSynchronize, (cudaStream_t stream), (stream),   \
    Sync | Faultable)                                                                                         \
  X(cudaError_t, cudaStreamSynchronize_ptsz, cudaStreamSynchronize, (cudaStream_t stream),        \
    (stream), Sync | Faultable)                                                                               \
  X(cudaError_t, cudaEventSynchronize, cudaEventSynchronize, (cudaEvent_t event), (event), Sync | Faultable)  \
  X(cudaError_t, cudaStreamWaitEvent, cudaStreamWaitEvent,                                        \
    (cudaStream_t stream, cudaEvent_t event, unsigned int flags), (stream, event, flags), Event)  \
  X(cudaError_t, cudaStreamWaitEvent_ptsz, cudaStreamWaitEvent,                                   \
    (cudaStream_t stream, cudaEvent_t event, unsigned int flags), (stream, event, flags), Event)  \
  X(cudaError_t, cudaEventQuery, cudaEventQuery, (cudaEvent_t event), (event), Counted | Event)   \
  X(cudaError_t, cudaStreamQuery, cudaStreamQuery, (cudaStream_t stream), (stream),               \
    Counted | Stream)                                                                             \
  X(cudaError_t, cudaStreamQuery_ptsz, cudaStreamQuery, (cudaStream_t stream), (stream),          \
    Counted | Stream)                                                                             \
  /* events */                                                                                    \
  X(cudaError_t, cudaEventCreate, cudaEventCreate, (cudaEvent_t * event), (event),                \
    Event | InitsDevice)                                                                          \
  X(cudaError_t, cudaEventCreateWithFlags, cudaEventCreateWithFlags,                              \
    (cudaEvent_t * event, unsigned int flags), (event, flags), Event | InitsDevice)               \
  X(cudaError_t, cudaEventRecord, cudaEventRecord, (cudaEvent_t event, cudaStream_t stream),      \
    (event, stream), Event | EventRecord)                                                         \
  X(cudaError_t, cudaEventRecord_ptsz, cudaEventRecord,                                           \
    (cudaEvent_t event, cudaStream_t stream), (event, stream), Event | EventRecord)               \
  X(cudaError_t, cudaEventRecordWithFlags, cudaEventRecordWithFlags,                              \
    (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags),         \
    Event | EventRecord)                                                                          \
  X(cudaError_t, cudaEventRecordWithFlags_ptsz, cudaEventRecordWithFlags,                         \
    (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags),         \
    Event | EventRecord)                                                                          \
  X(cudaError_t, cudaEventElapsedTime, cudaEventElapsedTime,                                      \
    (float* ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end), Event | EventTiming)       \
  /* CUDA 12.8+ only (13 has cudaEventElapsedTime alone): docs/shim.md, "CUDA 12 and 13" */      \
  X(cudaError_t, cudaEventElapsedTime_v2, cudaEventElapsedTime,                                   \
    (float* ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end), Event | EventTiming)       \
  X(cudaError_t, cudaEventDestroy, cudaEventDestroy, (cudaEvent_t event), (event), Event)         \
  /* streams */                                                                                   \
  X(cudaError_t, cudaStreamCreate, cudaStreamCreate, (cudaStream_t * pStream), (pStream),         \
    Stream | InitsDevice)                                                                         \
  X(cudaError_t, cudaStreamCreateWithFlags, cudaStreamCreateWithFlags,                            \
    (cudaStream_t * pStream, unsigned int flags), (pStream, flags), Stream | InitsDevice)         \
  X(cudaError_t, cudaStreamCreateWithPriority, cudaStreamCreateWithPriority,                      \
    (cudaStream_t * pStream, unsigned int flags, int priority), (pStream, flags, priority),       \
    Stream | InitsDevice)                                                                         \
  X(cudaError_t, cudaStreamDestroy, cudaStreamDestroy, (cudaStream_t stream), (stream), Stream)   \
  /* error state */                                                                               \
  X(cudaError_t, cudaGetLastError, cudaGetLastError, (void), (), Error)                           \
  X(cudaError_t, cudaPeekAtLastError, cudaPeekAtLastError, (void), (), Error)                     \
  /* driver entry points (recorded; the returned pointers pass through unchanged) */              \
  X(cudaError_t, cudaGetDriverEntryPoint, cudaGetDriverEntryPoint,                                \
    (const char* symbol, void** funcPtr, unsigned long long flags,                                \
     enum cudaDriverEntryPointQueryResult* driverStatus),                                         \
    (symbol, funcPtr, flags, driverStatus), 0)                                                    \
  X(cudaError_t, cudaGetDriverEntryPoint_ptsz, cudaGetDriverEntryPoint,                           \
    (const char* symbol, void** funcPtr, unsigned long long flags,                                \
     enum cudaDriverEntryPointQueryResult* driverStatus),                                         \
    (symbol, funcPtr, flags, driverStatus), 0)                                                    \
  X(cudaError_t, cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion,              \
    (const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,      \
     enum cudaDriverEntryPointQueryResult* driverStatus),                                         \
    (symbol, funcPtr, cudaVersion, flags, driverStatus), 0)                                       \
  X(cudaError_t, cudaGetDriverEntryPointByVersion_ptsz, cudaGetDriverEntryPointByVersion,         \
    (const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,      \
     enum cudaDriverEntryPointQueryResult* driverStatus),                                         \
    (symbol, funcPtr, cudaVersion, flags, driverStatus), 0)                                       \
  /* copies and sets */                                                                           \
  X(cudaError_t, cudaMemcpy, cudaMemcpy,                                                          \
    (void* dst, const void* src, size_t count, enum cudaMemcpyKind kind),                         \
    (dst, src, count, kind), Memcpy | InitsDevice | Faultable)                                                \
  X(cudaError_t, cudaMemcpy_ptds, cudaMemcpy,                                                     \
    (void* dst, const void* src, size_t count, enum cudaMemcpyKind kind),                         \
    (dst, src, count, kind), Memcpy | InitsDevice | Faultable)                                                \
  X(cudaError_t, cudaMemcpyAsync, cudaMemcpyAsync,                                                \
    (void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),    \
    (dst, src, count, kind, stream), Memcpy | InitsDevice | Faultable)                                        \
  X(cudaError_t, cudaMemcpyAsync_ptsz, cudaMemcpyAsync,                                           \
    (void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),    \
    (dst, src, count, kind, stream), Memcpy | InitsDevice | Faultable)                                        \
  X(cudaError_t, cudaMemset, cudaMemset, (void* devPtr, int value, size_t count),                 \
    (devPtr, value, count), Memcpy | InitsDevice | Faultable)                                                 \
  X(cudaError_t, cudaMemset_ptds, cudaMemset, (void* devPtr, int value, size_t count),            \
    (devPtr, value, count), Memcpy | InitsDevice | Faultable)                                                 \
  X(cudaError_t, cudaMemsetAsync, cudaMemsetAsync,                                                \
    (void* devPtr, int value, size_t count, cudaStream_t stream), (devPtr, value, count, stream),  \
    Memcpy | InitsDevice | Faultable)                                                                         \
  X(cudaError_t, cudaMemsetAsync_ptsz, cudaMemsetAsync,                                           \
    (void* devPtr, int value, size_t count, cudaStream_t stream), (devPtr, value, count, stream),  \
    Memcpy | InitsDevice | Faultable)                                                                         \
  /* kernel launches: counted per thread and device unless CUPROBE_LAUNCH_EVENTS=1; faultable */ \
  X(cudaError_t, cudaLaunchKernel, cudaLaunchKernel,                                              \
    (const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,                \
     cudaStream_t stream),                                                                        \
    (func, gridDim, blockDim, args, sharedMem, stream), Counted | Faultable)                            \
  X(cudaError_t, cudaLaunchKernel_ptsz, cudaLaunchKernel,                                         \
    (const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,                \
     cudaStream_t stream),                                                                        \
    (func, gridDim, blockDim, args, sharedMem, stream), Counted | Faultable)                            \
  X(cudaError_t, cudaLaunchKernelExC, cudaLaunchKernelExC,                                        \
    (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args),      \
    Counted | Faultable)                                                                          \
  X(cudaError_t, cudaLaunchKernelExC_ptsz, cudaLaunchKernelExC,                                   \
    (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args),      \
    Counted | Faultable)                                                                          \
  /* what kernel<<<...>>> compiles to since CUDA 12 (declared in cudart_internal.h) */           \
  X(cudaError_t, __cudaLaunchKernel, __cudaLaunchKernel,                                          \
    (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,             \
     cudaStream_t stream),                                                                        \
    (kernel, gridDim, blockDim, args, sharedMem, stream), Counted | Faultable)                            \
  X(cudaError_t, __cudaLaunchKernel_ptsz, __cudaLaunchKernel,                                     \
    (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,             \
     cudaStream_t stream),                                                                        \
    (kernel, gridDim, blockDim, args, sharedMem, stream), Counted | Faultable)                            \
  /* queried by the shim for the process header; recorded like any call when the app calls */   \
  X(cudaError_t, cudaGetDeviceProperties, cudaGetDeviceProperties,                                \
    (struct cudaDeviceProp * prop, int device), (prop, device), 0)                                \
  /* what CUDA 12 headers compile cudaGetDeviceProperties to; absent from 13 (the struct is not */ \
  /* read by the shim, so its layout, which differs, does not matter) */                          \
  X(cudaError_t, cudaGetDeviceProperties_v2, cudaGetDeviceProperties,                             \
    (struct cudaDeviceProp * prop, int device), (prop, device), 0)                                \
  X(cudaError_t, cudaRuntimeGetVersion, cudaRuntimeGetVersion, (int* runtimeVersion),             \
    (runtimeVersion), 0)                                                                          \
  X(cudaError_t, cudaDriverGetVersion, cudaDriverGetVersion, (int* driverVersion),                \
    (driverVersion), 0)
