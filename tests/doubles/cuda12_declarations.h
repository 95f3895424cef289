// The few CUDA 12 runtime declarations the libcudart.so.12 test double and its programs need and
// CUDA 13's headers (the only ones on the development machine) no longer have, written from
// NVIDIA's public CUDA 12 runtime API documentation ("cudaDeviceProp Struct Reference",
// cudaGetDeviceProperties_v2, cudaEventElapsedTime_v2), not copied from NVIDIA's headers.
//
// cudaDeviceProp as CUDA 12.x lays it out: the CUDA 13 structure plus the fields CUDA 13 removed
// (clockRate, deviceOverlap, kernelExecTimeoutEnabled, computeMode, maxTexture1DLinear,
// memoryClockRate, singleToDoublePrecisionPerfRatio, cooperativeMultiDeviceLaunch) in their
// places. clockRate fills what is padding in 13, so name, UUID, total memory and the compute
// capability keep their offsets; the multiprocessor count moves by 4 bytes, the PCI ids by 16,
// and most fields after them by more. The reserved tail is sized to the
// 1,032 bytes the structure has had throughout 12.x; the fields in it that later 12.x releases
// named are not needed here.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>

namespace cuda12 {

struct DeviceProp {
  char name[256];
  cudaUUID_t uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;  // removed in 13
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;  // removed in 13
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;  // removed in 13
  int integrated;
  int canMapHostMemory;
  int computeMode;  // removed in 13
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture1DLinear;  // removed in 13
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;  // removed in 13
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio;  // removed in 13
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;  // removed in 13
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseCudaArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingCudaArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int tail[63];  // fields of later 12.x releases and reserved space
};
static_assert(sizeof(DeviceProp) == 1032, "CUDA 12's cudaDeviceProp is 1,032 bytes");
static_assert(offsetof(DeviceProp, major) == offsetof(cudaDeviceProp, major));
static_assert(offsetof(DeviceProp, multiProcessorCount) == offsetof(cudaDeviceProp, multiProcessorCount) + 4);
static_assert(offsetof(DeviceProp, pciBusID) == offsetof(cudaDeviceProp, pciBusID) + 16);

}  // namespace cuda12

// CUDA 12 names (what its headers compile cudaGetDeviceProperties to, and 12.8's new elapsed-time
// function) that CUDA 13's headers do not declare. Programs built for the .12 double call these;
// the double itself defines them from the hook table, with CUDA 13's parameter types.
#ifndef CUDA12_STRUCTURES_ONLY
extern "C" cudaError_t cudaGetDeviceProperties_v2(cuda12::DeviceProp* prop, int device);
extern "C" cudaError_t cudaEventElapsedTime_v2(float* ms, cudaEvent_t start, cudaEvent_t end);
#endif
