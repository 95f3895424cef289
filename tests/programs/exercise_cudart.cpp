// Calls every hooked CUDA runtime function once, in a fixed order, and prints "API RET" per call
// (counted APIs are marked "counted"). Built twice: against the test double and against the
// real libcudart.so.13; tests compare these lines with the trace.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "cudart_internal.h"

namespace {
void out(const char* api, cudaError_t r, bool counted = false) { std::printf("%s %d%s\n", api, int(r), counted ? " counted" : ""); }
}  // namespace

#define CALL(api, ...) out(#api, api(__VA_ARGS__))
#define COUNTED(api, ...) out(#api, api(__VA_ARGS__), true)

extern "C" cudaError_t cudaMallocAsync_ptsz(void**, size_t, cudaStream_t);
extern "C" cudaError_t cudaMemcpyAsync_ptsz(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
extern "C" cudaError_t cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t);

int main() {
  int n = 0, dev = 0;
  CALL(cudaGetDeviceCount, &n);
  CALL(cudaSetDevice, 0);
  COUNTED(cudaGetDevice, &dev);
  void *a = nullptr, *b = nullptr, *c = nullptr, *h = nullptr;
  CALL(cudaMalloc, &a, 1 << 20);
  size_t free_b = 0, total = 0;
  CALL(cudaMemGetInfo, &free_b, &total);
  cudaStream_t s = nullptr, s2 = nullptr, s3 = nullptr;
  CALL(cudaStreamCreate, &s);
  CALL(cudaStreamCreateWithFlags, &s2, cudaStreamNonBlocking);
  CALL(cudaStreamCreateWithPriority, &s3, cudaStreamNonBlocking, -1);
  CALL(cudaMallocAsync, &b, 4096, s);
  CALL(cudaMallocAsync_ptsz, &c, 8192, s);
  size_t pitch = 0;
  void* p2 = nullptr;
  CALL(cudaMallocPitch, &p2, &pitch, 1000, 10);
  cudaPitchedPtr pp{};
  CALL(cudaMalloc3D, &pp, cudaExtent{100, 4, 2});
  void* m = nullptr;
  CALL(cudaMallocManaged, &m, 65536, cudaMemAttachGlobal);
  CALL(cudaMallocHost, &h, 4096);
  void* h2 = nullptr;
  CALL(cudaHostAlloc, &h2, 8192, cudaHostAllocDefault);
  static char reg[4096];
  CALL(cudaHostRegister, reg, sizeof reg, cudaHostRegisterDefault);
  CALL(cudaHostUnregister, reg);
  cudaEvent_t e1 = nullptr, e2 = nullptr;
  CALL(cudaEventCreate, &e1);
  CALL(cudaEventCreateWithFlags, &e2, cudaEventDefault);
  CALL(cudaEventRecord, e1, s);
  CALL(cudaMemcpy, a, h, 4096, cudaMemcpyHostToDevice);
  CALL(cudaMemcpyAsync, h, a, 4096, cudaMemcpyDeviceToHost, s);
  CALL(cudaMemcpyAsync_ptsz, h, a, 2048, cudaMemcpyDeviceToHost, s);
  CALL(cudaMemset, a, 0, 4096);
  CALL(cudaMemsetAsync, a, 1, 2048, s);
  static int dummy_kernel;
  COUNTED(cudaLaunchKernel, &dummy_kernel, dim3(1), dim3(32), nullptr, 0, s);
  COUNTED(cudaLaunchKernel_ptsz, &dummy_kernel, dim3(2), dim3(64), nullptr, 0, s);
  COUNTED(__cudaLaunchKernel, reinterpret_cast<cudaKernel_t>(&dummy_kernel), dim3(3), dim3(96), nullptr, 0, s);
  CALL(cudaEventRecordWithFlags, e2, s, 0);
  CALL(cudaStreamWaitEvent, s2, e2, 0);
  COUNTED(cudaEventQuery, e2);
  CALL(cudaEventSynchronize, e2);
  float ms = 0;
  CALL(cudaEventElapsedTime, &ms, e1, e2);
  CALL(cudaStreamSynchronize, s);
  CALL(cudaDeviceSynchronize);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult qr{};
  CALL(cudaGetDriverEntryPointByVersion, "cuMemCreate", &fn, 12000, cudaEnableDefault, &qr);
  CALL(cudaPeekAtLastError);
  CALL(cudaGetLastError);
  CALL(cudaFreeAsync, b, s);
  CALL(cudaFree, c);
  CALL(cudaFree, p2);
  CALL(cudaFree, pp.ptr);
  CALL(cudaFree, m);
  CALL(cudaFree, a);
  CALL(cudaFreeHost, h);
  CALL(cudaFreeHost, h2);
  CALL(cudaEventDestroy, e1);
  CALL(cudaEventDestroy, e2);
  CALL(cudaStreamDestroy, s);
  CALL(cudaStreamDestroy, s2);
  CALL(cudaStreamDestroy, s3);
  return 0;
}
