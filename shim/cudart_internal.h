// CUDA runtime entry points that are exported by libcudart.so.13 and called by nvcc-generated
// code, but declared only for nvcc (crt/device_functions.h), not for host compilers. Since
// CUDA 12, `kernel<<<...>>>(...)` compiles to __cudaLaunchKernel, so this is how PyTorch's own
// kernels are launched; cudaLaunchKernel itself is rarely called. Signatures as in CUDA 13.0's
// crt/device_functions.h.
#pragma once

#include <cuda_runtime_api.h>

extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                          size_t sharedMem, cudaStream_t stream);
extern "C" cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                               size_t sharedMem, cudaStream_t stream);
