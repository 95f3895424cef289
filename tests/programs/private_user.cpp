// A library with the CUDA runtime as NEEDED (DT_RPATH to the flavor-1 double), opened by
// private_loader with dlopen(RTLD_LOCAL), the way Python opens torch's libraries.
#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"))) int private_use_cuda(int* version) {
  void* p = nullptr;
  if (cudaMalloc(&p, 12345) != cudaSuccess) return 1;
  if (cudaFree(p) != cudaSuccess) return 2;
  if (cudaRuntimeGetVersion(version) != cudaSuccess) return 3;
  return 0;
}
