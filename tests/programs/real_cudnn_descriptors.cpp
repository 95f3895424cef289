// Makes descriptor-only calls against the REAL libcudnn.so.9, which work without a GPU: two
// backend TENSOR descriptors and a CONVOLUTION descriptor (create, set, finalize), a legacy
// tensor descriptor (create, set Nd, get Nd), their destruction, then cudnnCreate (which answers
// 1001 NOT_INITIALIZED on a machine without a GPU; that is not an error here). Prints "API
// STATUS" per call; tests compare these lines with the trace. Exits 1 if a descriptor call fails.
#include <cudnn.h>

#include <cstdint>
#include <cstdio>

namespace {

int failures = 0;

cudnnStatus_t out(const char* api, cudnnStatus_t s, bool must_succeed = true) {
  std::printf("%s %d\n", api, int(s));
  if (must_succeed && s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "real_cudnn_descriptors: %s failed: %d (%s)\n", api, int(s), cudnnGetErrorString(s));
    ++failures;
  }
  return s;
}

#define CALL(api, ...) out(#api, api(__VA_ARGS__))

cudnnBackendDescriptor_t make_tensor(const int64_t dims[4], int64_t uid) {
  const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  const int64_t alignment = 16;
  cudnnBackendDescriptor_t t = nullptr;
  CALL(cudnnBackendCreateDescriptor, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t);
  CALL(cudnnBackendSetAttribute, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  CALL(cudnnBackendSetAttribute, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  CALL(cudnnBackendSetAttribute, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  CALL(cudnnBackendSetAttribute, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  CALL(cudnnBackendSetAttribute, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  CALL(cudnnBackendFinalize, t);
  return t;
}

}  // namespace

int main() {
  const int64_t xdims[4] = {8, 64, 16, 16};
  const int64_t wdims[4] = {64, 64, 3, 3};
  cudnnBackendDescriptor_t x = make_tensor(xdims, 'x');
  cudnnBackendDescriptor_t w = make_tensor(wdims, 'w');

  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const int64_t pad[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  cudnnBackendDescriptor_t conv = nullptr;
  CALL(cudnnBackendCreateDescriptor, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  CALL(cudnnBackendSetAttribute, conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
  CALL(cudnnBackendFinalize, conv);

  cudnnTensorDescriptor_t legacy = nullptr;
  const int dims[4] = {8, 64, 16, 16};
  const int strides[4] = {64 * 16 * 16, 16 * 16, 16, 1};
  CALL(cudnnCreateTensorDescriptor, &legacy);
  CALL(cudnnSetTensorNdDescriptor, legacy, CUDNN_DATA_FLOAT, 4, dims, strides);
  cudnnDataType_t got_type = CUDNN_DATA_DOUBLE;
  int got_nb = 0, got_dims[8] = {}, got_strides[8] = {};
  CALL(cudnnGetTensorNdDescriptor, legacy, 8, &got_type, &got_nb, got_dims, got_strides);
  if (got_type != CUDNN_DATA_FLOAT || got_nb != 4 || got_dims[1] != 64 || got_strides[0] != strides[0]) {
    std::fprintf(stderr, "real_cudnn_descriptors: cudnnGetTensorNdDescriptor returned other values\n");
    ++failures;
  }

  CALL(cudnnBackendDestroyDescriptor, conv);
  CALL(cudnnBackendDestroyDescriptor, w);
  CALL(cudnnBackendDestroyDescriptor, x);
  CALL(cudnnDestroyTensorDescriptor, legacy);

  cudnnHandle_t handle = nullptr;
  cudnnStatus_t s = out("cudnnCreate", cudnnCreate(&handle), false);
  if (s == CUDNN_STATUS_SUCCESS) {
    CALL(cudnnDestroy, handle);
  } else if (s != CUDNN_STATUS_NOT_INITIALIZED) {
    std::fprintf(stderr, "real_cudnn_descriptors: cudnnCreate failed: %d (%s)\n", int(s), cudnnGetErrorString(s));
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}
