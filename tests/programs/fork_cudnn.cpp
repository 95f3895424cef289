// A legacy cuDNN call whose problem the parent interns, then the same call in a forked child: the
// child's trace must describe that problem itself (its problem table starts empty, and so must the
// forking thread's per-thread cache of legacy problems). Then the child makes a call the parent
// never made, and exits; the parent waits and makes its call once more.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

void ck(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "fork_cudnn: %s failed: %d\n", what, int(s));
    std::exit(1);
  }
}

cudnnTensorDescriptor_t tensor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t d = nullptr;
  ck(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
  ck(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w), "cudnnSetTensor4dDescriptor");
  return d;
}

struct Bn {
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, stats;
  void* mem;
  void run() {
    const float one = 1.0f, zero = 0.0f;
    ck(cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x, mem, x, mem, stats,
                                               mem, mem, mem, mem, 1e-5),
       "cudnnBatchNormalizationForwardInference");
  }
};

}  // namespace

int main() {
  Bn bn{};
  ck(cudnnCreate(&bn.handle), "cudnnCreate");
  bn.x = tensor(8, 16, 4, 4);
  bn.stats = tensor(1, 16, 1, 1);
  if (cudaMalloc(&bn.mem, 8 * 16 * 4 * 4 * sizeof(float)) != cudaSuccess) return 1;
  bn.run();
  pid_t pid = fork();
  if (pid == 0) {
    bn.run();
    Bn other = bn;
    other.x = tensor(2, 16, 4, 4);
    other.run();
    std::fflush(nullptr);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  bn.run();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}
