// Calls cudaMallocAsync through the global scope (the shim's export) while the loaded runtime
// double lacks it: the shim must answer cudaErrorSharedObjectSymbolNotFound, not crash.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

int main() {
  void* p = nullptr;
  cudaMalloc(&p, 100);  // links the program against the double
  using Fn = cudaError_t (*)(void**, size_t, cudaStream_t);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudaMallocAsync"));
  if (fn == nullptr) {
    std::printf("no symbol\n");
    return 3;
  }
  std::printf("%d\n", int(fn(&p, 100, nullptr)));
  return 0;
}
