// Added cost per intercepted call: each benchmark calls the CUDA runtime test double twice
// over, directly through the double's own function pointer (the baseline, no shim involved)
// and through the exported name, which the preloaded shim interposes. Run it under the shim
// (bench/overhead.sh does) and subtract; run without the shim, both sides must match.
//
// Recorded: cudaStreamSynchronize (one event, no argument fields) and cudaMemGetInfo (two
// fields). Counted: cudaLaunchKernel (no event, a per-thread counter).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

namespace {

template <typename Fn>
Fn direct(const char* name) {
  // RTLD_NOLOAD: the copy the program already linked; dlsym on its handle skips the preload.
  static void* h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  void* p = h ? dlsym(h, name) : nullptr;
  if (p == nullptr) {
    std::fprintf(stderr, "cannot find %s in the loaded libcudart.so.13\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(p);
}

int kernel_stub;

void BM_StreamSynchronize_direct(benchmark::State& state) {
  static auto fn = direct<cudaError_t (*)(cudaStream_t)>("cudaStreamSynchronize");
  for (auto _ : state) benchmark::DoNotOptimize(fn(nullptr));
}
void BM_StreamSynchronize_hooked(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cudaStreamSynchronize(nullptr));
}
void BM_MemGetInfo_direct(benchmark::State& state) {
  static auto fn = direct<cudaError_t (*)(size_t*, size_t*)>("cudaMemGetInfo");
  size_t f = 0, t = 0;
  for (auto _ : state) benchmark::DoNotOptimize(fn(&f, &t));
}
void BM_MemGetInfo_hooked(benchmark::State& state) {
  size_t f = 0, t = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cudaMemGetInfo(&f, &t));
}
void BM_LaunchKernel_direct(benchmark::State& state) {
  static auto fn = direct<cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t)>("cudaLaunchKernel");
  for (auto _ : state) benchmark::DoNotOptimize(fn(&kernel_stub, dim3(1), dim3(1), nullptr, 0, nullptr));
}
void BM_LaunchKernel_hooked(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cudaLaunchKernel(&kernel_stub, dim3(1), dim3(1), nullptr, 0, nullptr));
}

}  // namespace

BENCHMARK(BM_StreamSynchronize_direct)->ThreadRange(1, 16);
BENCHMARK(BM_StreamSynchronize_hooked)->ThreadRange(1, 16);
BENCHMARK(BM_MemGetInfo_direct)->Threads(1);
BENCHMARK(BM_MemGetInfo_hooked)->Threads(1);
BENCHMARK(BM_LaunchKernel_direct)->ThreadRange(1, 16);
BENCHMARK(BM_LaunchKernel_hooked)->ThreadRange(1, 16);
BENCHMARK_MAIN();
