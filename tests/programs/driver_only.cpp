// A process that uses the CUDA driver and never loads a runtime (as JAX does): initialises the
// driver, allocates on its device 0 and frees. The shim must describe the device from the
// driver alone.
#include <cuda.h>

#include <cstdio>

int main() {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc_v2(&p, 1 << 20);
  std::printf("alloc %d\n", int(r));
  if (r == CUDA_SUCCESS) cuMemFree_v2(p);
  return 0;
}
