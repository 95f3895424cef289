// A long training job compressed into seconds, for the flight recorder's soak test: THREADS
// workers (own cuDNN handle and stream each) run STEPS steps of what the shim sees of an
// iteration: per layer a legacy convolution (cudnnConvolutionForward) and a few kernel
// launches, a host-to-device copy, an event record and query, and a stream synchronization at
// the end of the step. Every 20th step a worker frees and allocates a block (the caching
// allocator reshuffling); every SHAPE_EVERY-th step (0: never) it meets a new input shape and
// runs a cudnnFindConvolutionForwardAlgorithmEx for it (a cudnn.benchmark search). Each worker
// keeps its blocks. At the end the main thread asks for OOM_BYTES: cudaMalloc fails, the
// framework's report goes to c10::reportOutOfMemoryToProfiler (the libc10 double) and the
// program exits 1, as torch.OutOfMemoryError ends a job.
//
// Usage: soak THREADS STEPS SHAPE_EVERY OOM_BYTES
// Prints what the trace must hold whatever was overwritten:
//   mallocs N frees N finds N live_bytes N oom_bytes N
// then "rss_kb N" (VmHWM: the process's peak resident memory).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace c10 {
struct Device {  // c10/core/Device.h
  int8_t type;
  int8_t index;
};
void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated, size_t total_reserved, Device device);
}  // namespace c10

namespace {

std::atomic<uint64_t> g_mallocs{0}, g_frees{0}, g_finds{0}, g_live{0};

void ck(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "soak: %s failed: %d\n", what, int(s));
    std::exit(2);
  }
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "soak: %s failed: %d\n", what, int(e));
    std::exit(2);
  }
}
#define CK(call) ck(call, #call)

void* dev_alloc(size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, bytes));
  g_mallocs.fetch_add(1);
  g_live.fetch_add(bytes);
  return p;
}
void dev_free(void* p, size_t bytes) {
  CK(cudaFree(p));
  g_frees.fetch_add(1);
  g_live.fetch_sub(bytes);
}

struct Conv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
};

void set_tensor(cudnnTensorDescriptor_t d, int n, int c, int h, int w) {
  const int dims[4] = {n, c, h, w};
  const int strides[4] = {c * h * w, h * w, w, 1};
  CK(cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, 4, dims, strides));
}

Conv make_conv(int batch) {
  Conv c;
  CK(cudnnCreateTensorDescriptor(&c.x));
  CK(cudnnCreateTensorDescriptor(&c.y));
  set_tensor(c.x, batch, 16, 8, 8);
  set_tensor(c.y, batch, 16, 8, 8);
  CK(cudnnCreateFilterDescriptor(&c.w));
  const int wdims[4] = {16, 16, 3, 3};
  CK(cudnnSetFilterNdDescriptor(c.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wdims));
  CK(cudnnCreateConvolutionDescriptor(&c.conv));
  const int pad[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  CK(cudnnSetConvolutionNdDescriptor(c.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  return c;
}

void find(cudnnHandle_t h, Conv& c, void* x, void* w, void* y, void* ws, size_t ws_bytes) {
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int n = 0;
  CK(cudnnFindConvolutionForwardAlgorithmEx(h, c.x, x, c.w, w, c.conv, c.y, y, 8, &n, perf, ws, ws_bytes));
  g_finds.fetch_add(1);
  for (int i = 0; i < n; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS) {
      c.algo = perf[i].algo;
      return;
    }
  }
}

void kernel_stub() {}

void worker(int id, long steps, int shape_every) {
  cudnnHandle_t h = nullptr;
  CK(cudnnCreate(&h));
  cudaStream_t s = nullptr;
  CK(cudaStreamCreate(&s));
  CK(cudnnSetStream(h, s));
  cudaEvent_t ev = nullptr;
  CK(cudaEventCreate(&ev));
  constexpr size_t kAct = 64 * 1024;
  constexpr size_t kWs = 1 << 20;
  constexpr size_t kChurn = 2 << 20;
  void* x = dev_alloc(kAct);
  void* y = dev_alloc(kAct);
  void* w = dev_alloc(16 * 16 * 9 * sizeof(float));
  void* ws = dev_alloc(kWs);
  void* churn = dev_alloc(kChurn);
  static char host[4096];
  const float one = 1.0f, zero = 0.0f;
  constexpr int kLayers = 4;
  Conv layers[kLayers];
  for (int l = 0; l < kLayers; ++l) {
    layers[l] = make_conv(8);
    find(h, layers[l], x, w, y, ws, kWs);
  }
  int shape = 0;
  for (long step = 0; step < steps; ++step) {
    if (shape_every > 0 && step > 0 && step % shape_every == 0) {
      // A new input shape: every layer's descriptors change and each problem is searched again.
      ++shape;
      for (int l = 0; l < kLayers; ++l) {
        set_tensor(layers[l].x, 8 + shape % 64, 16, 8, 8);
        set_tensor(layers[l].y, 8 + shape % 64, 16, 8, 8);
        find(h, layers[l], x, w, y, ws, kWs);
      }
    }
    CK(cudaMemcpyAsync(x, host, sizeof host, cudaMemcpyHostToDevice, s));
    for (int l = 0; l < kLayers; ++l) {
      CK(cudnnConvolutionForward(h, &one, layers[l].x, x, layers[l].w, w, layers[l].conv, layers[l].algo, ws, kWs,
                                 &zero, layers[l].y, y));
      for (int k = 0; k < 3; ++k) {
        void* args[1] = {nullptr};
        ck(cudaLaunchKernel(reinterpret_cast<const void*>(&kernel_stub), dim3(1), dim3(1), args, 0, s),
           "cudaLaunchKernel");
      }
    }
    CK(cudaEventRecord(ev, s));
    (void)cudaEventQuery(ev);
    if (step % 20 == 19) {
      dev_free(churn, kChurn);
      churn = dev_alloc(kChurn);
    }
    CK(cudaStreamSynchronize(s));
  }
  (void)id;
}

long rss_peak_kb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::atol(line + 6);
  }
  std::fclose(f);
  return kb;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: soak THREADS STEPS SHAPE_EVERY OOM_BYTES\n");
    return 2;
  }
  int threads = std::atoi(argv[1]);
  long steps = std::atol(argv[2]);
  int shape_every = std::atoi(argv[3]);
  size_t oom_bytes = std::strtoull(argv[4], nullptr, 10);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, steps, shape_every);
  for (auto& th : pool) th.join();
  std::printf("mallocs %llu frees %llu finds %llu live_bytes %llu oom_bytes %zu\n",
              (unsigned long long)g_mallocs.load(), (unsigned long long)g_frees.load(),
              (unsigned long long)g_finds.load(), (unsigned long long)g_live.load(), oom_bytes);
  std::printf("rss_kb %ld\n", rss_peak_kb());
  std::fflush(stdout);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, oom_bytes);
  if (e == cudaSuccess) {
    std::fprintf(stderr, "soak: the final allocation of %zu bytes succeeded; set FAKECUDA_MEM below it\n", oom_bytes);
    return 2;
  }
  c10::reportOutOfMemoryToProfiler(int64_t(oom_bytes), g_live.load(), g_live.load(), c10::Device{1, 0});
  std::fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %zu bytes\n", oom_bytes);
  return 1;
}
