// The smallest traced process: two CUDA runtime calls (cudaMalloc, cudaFree) and an exit. What its
// trace costs at rest (issue 30: at most 256 KiB).
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  void* p = nullptr;
  cudaError_t a = cudaMalloc(&p, 1 << 20);
  cudaError_t b = cudaFree(p);
  std::printf("malloc %d free %d\n", int(a), int(b));
  return a == cudaSuccess && b == cudaSuccess ? 0 : 1;
}
