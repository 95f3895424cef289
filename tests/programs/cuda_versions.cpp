// A program as built against one CUDA runtime major version (-DPROGRAM_RUNTIME_MAJOR=12 or 13,
// linked against that runtime double): the calls whose names or structures differ between CUDA
// 12 and 13, made the way that version's headers make them, on two devices. Prints what the
// program itself sees, one "key value" per line, for tests/shim/cuda_versions_test.cpp:
//   runtime VERSION
//   prop DEVICE NAME|PCI_BUS|SMS|CC_MAJOR   (from cudaDeviceProp in the program's own layout)
//   entry RET POINTER_NONNULL                (cudaGetDriverEntryPoint("cuMemAlloc"))
//   elapsed RET
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <initializer_list>

#if PROGRAM_RUNTIME_MAJOR == 12
#include "cuda12_declarations.h"
using DeviceProp = cuda12::DeviceProp;
// What CUDA 12's headers compile these calls to.
cudaError_t get_properties(DeviceProp* p, int device) { return cudaGetDeviceProperties_v2(p, device); }
cudaError_t elapsed_time(float* ms, cudaEvent_t a, cudaEvent_t b) { return cudaEventElapsedTime_v2(ms, a, b); }
#else
using DeviceProp = cudaDeviceProp;
cudaError_t get_properties(DeviceProp* p, int device) { return cudaGetDeviceProperties(p, device); }
cudaError_t elapsed_time(float* ms, cudaEvent_t a, cudaEvent_t b) { return cudaEventElapsedTime(ms, a, b); }
#endif

int main() {
  int version = 0;
  cudaRuntimeGetVersion(&version);
  std::printf("runtime %d\n", version);
  // Device 1 first: the trace must describe each device, not the first one twice.
  for (int device : {1, 0}) {
    if (cudaSetDevice(device) != cudaSuccess) return 1;
    void* p = nullptr;
    if (cudaMalloc(&p, 1 << 20) != cudaSuccess) return 1;
    DeviceProp prop{};
    cudaError_t r = get_properties(&prop, device);
    std::printf("prop %d %d|%s|%d|%d|%d\n", device, int(r), prop.name, prop.pciBusID, prop.multiProcessorCount,
                prop.major);
    cudaFree(p);
  }
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t r = cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &status);
  std::printf("entry %d %d\n", int(r), fn != nullptr);
  if (r == cudaSuccess && fn != nullptr) {
    CUdeviceptr d = 0;
    reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&d, 4096);
  }
  cudaEvent_t a = nullptr, b = nullptr;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, nullptr);
  cudaEventRecord(b, nullptr);
  float ms = -1;
  std::printf("elapsed %d\n", int(elapsed_time(&ms, a, b)));
  return 0;
}
