// One process with both kinds of algorithm results: cuBLASLt's heuristics (asked for two
// algorithms) and then cuDNN's legacy cudnnGetConvolutionForwardAlgorithm_v7, against the
// doubles. Prints "lt ALGO..." and "cudnn ALGO..." (the algorithms each returned, in order), which
// tests compare with the results the trace gives each call: the shim writes both kinds as
// algorithm-results records, which readers find by id.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

void ck(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "mixed_results: %s failed\n", what);
    std::exit(1);
  }
}
#define CK(call, ok_value) ck((call) == (ok_value), #call)

char g_memory[64];  // the "device" pointers: any distinct, aligned addresses do for the doubles

void lt() {
  cublasLtHandle_t h = nullptr;
  CK(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t l = nullptr;
  CK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 64, 64, 64), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref = nullptr;
  CK(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t results[2] = {};
  int returned = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(h, desc, l, l, l, l, pref, 2, results, &returned), CUBLAS_STATUS_SUCCESS);
  ck(returned >= 1, "cublasLtMatmulAlgoGetHeuristic (no algorithm)");
  std::printf("lt");
  for (int i = 0; i < returned; ++i) {
    int32_t id = -1;
    size_t written = 0;
    CK(cublasLtMatmulAlgoConfigGetAttribute(&results[i].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written),
       CUBLAS_STATUS_SUCCESS);
    std::printf(" %d", int(id));
  }
  std::printf("\n");
  const float one = 1.0f, zero = 0.0f;
  CK(cublasLtMatmul(h, desc, &one, g_memory, l, g_memory + 16, l, &zero, g_memory + 32, l, g_memory + 32, l,
                    &results[0].algo, nullptr, 0, nullptr),
     CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(h);
}

void legacy() {
  cudnnHandle_t handle = nullptr;
  CK(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  CK(cudnnCreateTensorDescriptor(&x), CUDNN_STATUS_SUCCESS);
  CK(cudnnCreateTensorDescriptor(&y), CUDNN_STATUS_SUCCESS);
  CK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 16, 32, 32), CUDNN_STATUS_SUCCESS);
  CK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 16, 32, 32), CUDNN_STATUS_SUCCESS);
  cudnnFilterDescriptor_t w = nullptr;
  CK(cudnnCreateFilterDescriptor(&w), CUDNN_STATUS_SUCCESS);
  CK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 16, 16, 3, 3), CUDNN_STATUS_SUCCESS);
  cudnnConvolutionDescriptor_t conv = nullptr;
  CK(cudnnCreateConvolutionDescriptor(&conv), CUDNN_STATUS_SUCCESS);
  CK(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
     CUDNN_STATUS_SUCCESS);
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int n = 0;
  CK(cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, 8, &n, perf), CUDNN_STATUS_SUCCESS);
  std::printf("cudnn");
  for (int i = 0; i < n; ++i) std::printf(" %d", int(perf[i].algo));
  std::printf("\n");
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyFilterDescriptor(w);
  cudnnDestroyTensorDescriptor(y);
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroy(handle);
}

}  // namespace

int main() {
  lt();
  legacy();
  return 0;
}
