// A training loop's CUDA runtime traffic, for machines without a GPU: run against cuprobe's
// CUDA test double it makes the calls a PyTorch job makes (device setup, caching-allocator
// segments, host-to-device copies, kernel launches, events and synchronizations), so that
// `scripts/demo.sh` shows what cuprobe captures anywhere.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

namespace {
int kernel_stub;  // stands in for a kernel's host-side handle

bool check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) std::fprintf(stderr, "%s failed: %d\n", what, int(r));
  return r == cudaSuccess;
}
}  // namespace

int main() {
  int devices = 0;
  if (!check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount") || devices == 0) return 1;
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0), "cudaStreamCreateWithPriority");
  // Parameters and optimizer state: a few large caching-allocator segments.
  std::vector<void*> segments;
  for (size_t mb : {20, 20, 64}) {
    void* p = nullptr;
    if (check(cudaMalloc(&p, mb << 20), "cudaMalloc")) segments.push_back(p);
  }
  void* pinned = nullptr;
  check(cudaHostAlloc(&pinned, 8 << 20, cudaHostAllocDefault), "cudaHostAlloc");
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int step = 0; step < 5; ++step) {
    check(cudaMemcpyAsync(segments[0], pinned, 8 << 20, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int k = 0; k < 40; ++k) {
      check(cudaLaunchKernel(&kernel_stub, dim3(256), dim3(128), nullptr, 0, stream), "cudaLaunchKernel");
    }
    if (step == 0) {  // first step: activations need one more segment
      void* p = nullptr;
      if (check(cudaMalloc(&p, 150 << 20), "cudaMalloc")) segments.push_back(p);
    }
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    double loss = 2.0 / (1.0 + step);
    check(cudaMemcpy(pinned, segments[1], 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    std::printf("step %d loss %.3f\n", step, loss);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (void* p : segments) check(cudaFree(p), "cudaFree");
  check(cudaFreeHost(pinned), "cudaFreeHost");
  check(cudaEventDestroy(start), "cudaEventDestroy");
  check(cudaEventDestroy(stop), "cudaEventDestroy");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}
