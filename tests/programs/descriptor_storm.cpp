// Churns backend TENSOR descriptors: N times (argument, default 2000000) create, set DATA_TYPE,
// DIMENSIONS, STRIDES, UNIQUE_ID and BYTE_ALIGNMENT, finalize, and destroy, with at most 64
// alive at a time (a ring; the oldest is destroyed before its slot is reused). Tests use it for
// the shim's cost and bounded memory under heavy descriptor traffic. Prints "done N".
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

void ck(cudnnStatus_t s, const char* what, long long i) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "descriptor_storm: %s failed at %lld: %d\n", what, i, int(s));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  long long n = argc > 1 ? std::atoll(argv[1]) : 2000000;
  constexpr int kAlive = 64;
  cudnnBackendDescriptor_t ring[kAlive] = {};
  const cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  const int64_t alignment = 16;
  for (long long i = 0; i < n; ++i) {
    cudnnBackendDescriptor_t& slot = ring[i % kAlive];
    if (slot != nullptr) {
      ck(cudnnBackendDestroyDescriptor(slot), "cudnnBackendDestroyDescriptor", i);
      slot = nullptr;
    }
    const int64_t batch = 1 + i % 32;
    const int64_t dims[4] = {batch, 64, 16, 16};
    const int64_t strides[4] = {64 * 16 * 16, 16 * 16, 16, 1};
    const int64_t uid = 1 + i % 1000;
    cudnnBackendDescriptor_t t = nullptr;
    ck(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t), "cudnnBackendCreateDescriptor", i);
    ck(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt), "DATA_TYPE", i);
    ck(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims), "DIMENSIONS", i);
    ck(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides), "STRIDES", i);
    ck(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), "UNIQUE_ID", i);
    ck(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment),
       "BYTE_ALIGNMENT", i);
    ck(cudnnBackendFinalize(t), "cudnnBackendFinalize", i);
    slot = t;
  }
  for (auto& slot : ring)
    if (slot != nullptr) ck(cudnnBackendDestroyDescriptor(slot), "cudnnBackendDestroyDescriptor", n);
  std::printf("done %lld\n", n);
  return 0;
}
