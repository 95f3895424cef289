// Imitates PyTorch's cudaMallocAsync backend (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) on a
// job whose activations grow: each step allocates a block 1 GiB larger than the last from the
// device's stream-ordered pool and frees it, with a small cudaMalloc beside it (a library's own
// buffer) so that memory samples are taken. The pool keeps what was freed reserved, and a larger
// request cannot reuse a smaller free block: after 1, 2 and 3 GiB the pool holds 6 GiB while at
// most 3 GiB was ever live. Exit 0; with the argument `oom`, a 4 GiB request follows, which the
// pool's free 6 GiB cannot serve in one piece (and FAKECUDA_MEM leaves no room to reserve more):
// it fails, and the program exits 1 as PyTorch's torch.OutOfMemoryError would end it.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  constexpr size_t kGiB = size_t(1) << 30;
  cudaStream_t stream = nullptr;
  for (size_t step = 1; step <= 3; ++step) {
    void* block = nullptr;
    if (cudaMallocAsync(&block, step * kGiB, stream) != cudaSuccess) return 2;
    void* small = nullptr;
    if (cudaMalloc(&small, size_t(1) << 20) != cudaSuccess) return 3;
    cudaFreeAsync(block, stream);
    cudaFree(small);
    usleep(20000);
  }
  if (argc > 1 && std::string(argv[1]) == "oom") {
    void* big = nullptr;
    cudaError_t r = cudaMallocAsync(&big, 4 * kGiB, stream);
    std::printf("4 GiB request: %d\n", int(r));
    return r == cudaSuccess ? 5 : 1;
  }
  void* last = nullptr;
  if (cudaMalloc(&last, size_t(1) << 20) != cudaSuccess) return 4;
  std::printf("pool_growth done\n");
  return 0;
}
