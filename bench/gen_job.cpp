// Makes a trace of a given size, for the analyzer's benchmark: run under `cuprobe record`
// against the test doubles, it performs a training-loop-like mix of calls: a few cuDNN plans
// built and executed for several problems, allocations and frees, copies, events, stream
// synchronizations, and kernel launches (counted, not events).
//
// Usage: gen_job EVENTS
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(int status, const char* what) {
  if (status != 0) {
    std::fprintf(stderr, "%s failed: %d\n", what, status);
    std::exit(1);
  }
}
#define CHECK(x) check(int(x), #x)

cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t t) {
  cudnnBackendDescriptor_t d = nullptr;
  CHECK(cudnnBackendCreateDescriptor(t, &d));
  return d;
}

template <typename T>
void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t c, const T* v) {
  CHECK(cudnnBackendSetAttribute(d, n, t, c, v));
}

cudnnBackendDescriptor_t tensor(int64_t uid, int64_t n, int64_t c, int64_t hw) {
  cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  int64_t dims[4] = {n, c, hw, hw}, strides[4] = {c * hw * hw, hw * hw, hw, 1}, align = 16;
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  CHECK(cudnnBackendFinalize(d));
  return d;
}

// One forward-convolution plan for batch n, picked by heuristics.
cudnnBackendDescriptor_t plan_for(cudnnHandle_t h, int64_t n) {
  auto x = tensor('x', n, 64, 32), w = tensor('w', 64, 64, 3), y = tensor('y', n, 64, 32);
  auto conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t two = 2, ones[2] = {1, 1};
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two);
  for (auto a : {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                 CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_DILATIONS}) {
    set(conv, a, CUDNN_TYPE_INT64, 2, ones);
  }
  CHECK(cudnnBackendFinalize(conv));
  auto op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  CHECK(cudnnBackendFinalize(op));
  auto graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
  CHECK(cudnnBackendFinalize(graph));
  auto heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_INSTANT;
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
  CHECK(cudnnBackendFinalize(heur));
  auto cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t got = 0;
  CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &cfg));
  auto plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  CHECK(cudnnBackendFinalize(plan));
  return plan;
}

}  // namespace

int main(int argc, char** argv) {
  long target = argc > 1 ? std::atol(argv[1]) : 2000000;
  cudnnHandle_t h;
  CHECK(cudnnCreate(&h));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  std::vector<cudnnBackendDescriptor_t> plans;
  for (int64_t n : {8, 16, 32, 64}) plans.push_back(plan_for(h, n));
  void* bufs[3];
  for (auto& b : bufs) CHECK(cudaMalloc(&b, 1 << 20));
  void* ws = nullptr;
  CHECK(cudaMalloc(&ws, 64 << 20));
  auto pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  int64_t uids[3] = {'x', 'y', 'w'};
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, bufs);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  CHECK(cudnnBackendFinalize(pack));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  static int kernel;
  long events = 0;
  for (long step = 0; events < target; ++step) {
    // Ten events a step: an execution per problem, copies, events, a synchronization.
    for (auto p : plans) CHECK(cudnnBackendExecute(h, p, pack));
    CHECK(cudaMemcpyAsync(bufs[0], bufs[1], 4096, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaEventRecord(a, s));
    for (int k = 0; k < 20; ++k) CHECK(cudaLaunchKernel(&kernel, dim3(1), dim3(1), nullptr, 0, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaStreamSynchronize(s));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (step % 50 == 0) {  // an occasional allocation
      void* p;
      CHECK(cudaMalloc(&p, 2 << 20));
      CHECK(cudaFree(p));
      events += 2;
    }
    events += 9;
  }
  std::printf("%ld events\n", events);
  return 0;
}
