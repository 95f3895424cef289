// The one list of cuBLASLt functions cuprobe intercepts (issue 33): the heuristics query that
// offers algorithms for a matmul problem, and the matmul that runs one. Together they are what
// cuDNN's heuristic selections are for convolutions: a problem (the operation, layouts, types,
// epilogue), the algorithms offered with their configurations and workspaces, and the one that
// ran. PyTorch calls both from libtorch_cuda.so (at::cuda::blas: addmm with a bias, fp8
// scaled_mm, and every matmul when cuBLASLt is the preferred BLAS library), which has
// libcublasLt.so as a NEEDED entry, so the preloaded shim's exports are bound first.
// cublasLtCreate: the handle and the device it was created on, once per thread and device.
//
// Same entry format as cudart_hooks.h; parameter lists are cublasLt.h's (CUDA 12 and 13 alike),
// checked at compile time against the toolkit's header. Never faulted: recorded only.
#pragma once

#define CUPROBE_CUBLASLT_HOOKS(X)                                                                                 \
  X(cublasStatus_t, cublasLtCreate, cublasLtCreate, (cublasLtHandle_t * handle), (handle), 0)                     \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic,                               \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,        \
     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,          \
     cublasLtMatmulHeuristicResult_t results[], int* returned),                                                   \
    (handle, op, a, b, c, d, pref, requested, results, returned), BlasHeuristic)                                  \
  X(cublasStatus_t, cublasLtMatmul, cublasLtMatmul,                                                               \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t op, const void* alpha, const void* A,                          \
     cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta, const void* C,          \
     cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t* algo,               \
     void* workspace, size_t workspace_size, cudaStream_t stream),                                                \
    (handle, op, alpha, A, a, B, b, beta, C, c, D, d, algo, workspace, workspace_size, stream), BlasMatmul)
