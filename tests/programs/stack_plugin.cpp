// Loaded by stack_chain with dlopen after the process started: its frames must still be named.
#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"), noinline)) void plugin_alloc(size_t n) {
  void* p = nullptr;
  cudaMalloc(&p, n);
  asm volatile("" ::: "memory");
}

// A helper for Python through ctypes (whose own lookups bypass preloading): it makes the call.
extern "C" __attribute__((visibility("default"), noinline)) int helper_alloc(size_t n) {
  void* p = nullptr;
  int r = int(cudaMalloc(&p, n));
  asm volatile("" ::: "memory");
  return r;
}
