// Typed problems and the descriptor mirror, driven through the same entry points the cuDNN
// wrappers use: backend SetAttribute/Finalize mirroring and the legacy setters. One problem must
// be the same ProblemDesc (hash, id and text) from both APIs; its text is rendered by
// common/problem_text.h.
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "capture_cudnn_detail.h"
#include "cudnn_mirror.h"
#include "cudnn_problem.h"
#include "problem_table.h"
#include "problem_text.h"

namespace cuprobe::shim {
namespace {

// Fake descriptor handles: the mirror only uses them as keys.
void* handle(uintptr_t n) { return reinterpret_cast<void*>(0x10000 + n * 64); }

void set(void* d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const void* v, int64_t n) {
  DescEntry* e = desc_find(d);
  ASSERT_NE(e, nullptr);
  mirror_set_attribute(*e, name, type, n, v);
}

void backend_tensor(void* d, std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t uid,
                    cudnnDataType_t dtype = CUDNN_DATA_FLOAT, int64_t align = 16) {
  ASSERT_NE(desc_create(d, CUDNN_BACKEND_TENSOR_DESCRIPTOR), nullptr);
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &dtype, 1);
  set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), int64_t(dims.size()));
  set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), int64_t(strides.size()));
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid, 1);
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align, 1);
}

void backend_conv(void* d, std::vector<int64_t> pre, std::vector<int64_t> post, std::vector<int64_t> stride,
                  std::vector<int64_t> dil) {
  ASSERT_NE(desc_create(d, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), nullptr);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t spatial = int64_t(pre.size());
  set(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &comp, 1);
  set(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode, 1);
  set(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial, 1);
  set(d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pre.data(), spatial);
  set(d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, post.data(), spatial);
  set(d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride.data(), spatial);
  set(d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dil.data(), spatial);
}

std::string backend_graph_signature(cudnnBackendDescriptorType_t op_type, cudnnBackendAttributeName_t a0,
                                    void* t0, cudnnBackendAttributeName_t a1, void* t1,
                                    cudnnBackendAttributeName_t aout, void* tout, cudnnBackendAttributeName_t aconv,
                                    void* conv, uintptr_t base, int64_t* align = nullptr) {
  void* op = handle(base + 1);
  void* graph = handle(base + 2);
  EXPECT_NE(desc_create(op, uint16_t(op_type)), nullptr);
  set(op, aconv, CUDNN_TYPE_BACKEND_DESCRIPTOR, &conv, 1);
  set(op, a0, CUDNN_TYPE_BACKEND_DESCRIPTOR, &t0, 1);
  set(op, aout, CUDNN_TYPE_BACKEND_DESCRIPTOR, &tout, 1);
  set(op, a1, CUDNN_TYPE_BACKEND_DESCRIPTOR, &t1, 1);
  EXPECT_NE(desc_create(graph, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), nullptr);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, &op, 1);
  trace::ProblemDesc d{};
  int64_t min_align = 0;
  EXPECT_TRUE(graph_problem(d, desc_find(graph)->u.graph, &min_align));
  if (align) *align = min_align;
  char text[1024];
  render_problem(d, text, sizeof text);
  return text;
}

std::string text_of(const trace::ProblemDesc& d) {
  char text[1024];
  render_problem(d, text, sizeof text);
  return text;
}

TEST(Problem, BackendForwardConvolutionReadsLikeTheDocumentedExample) {
  backend_tensor(handle(1), {16, 64, 32, 32}, {65536, 1024, 32, 1}, 1);
  backend_tensor(handle(2), {64, 64, 3, 3}, {576, 9, 3, 1}, 2, CUDNN_DATA_FLOAT, 8);
  backend_tensor(handle(3), {16, 64, 32, 32}, {65536, 1024, 32, 1}, 3);
  backend_conv(handle(4), {1, 1}, {1, 1}, {1, 1}, {1, 1});
  int64_t align = 0;
  std::string s = backend_graph_signature(
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, handle(1),
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, handle(2), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, handle(3),
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, handle(4), 10, &align);
  EXPECT_EQ(s,
            "conv_fwd x[16,64,32,32]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32 -> "
            "y[16,64,32,32]f32 nchw");
  EXPECT_EQ(align, 8);  // the smallest byte alignment over the graph's tensors
}

TEST(Problem, ChannelsLastGroupsAsymmetricPaddingAndDgradRoles) {
  // Depthwise 3x3 (groups 32) in channels-last, backward data.
  backend_tensor(handle(21), {8, 32, 14, 14}, {6272, 1, 448, 32}, 1, CUDNN_DATA_HALF);  // dy
  backend_tensor(handle(22), {32, 1, 3, 3}, {9, 1, 3, 1}, 2, CUDNN_DATA_HALF);          // w
  backend_tensor(handle(23), {8, 32, 15, 15}, {7200, 1, 480, 32}, 3, CUDNN_DATA_HALF);  // dx
  backend_conv(handle(24), {0, 0}, {1, 1}, {1, 1}, {1, 1});
  std::string s = backend_graph_signature(
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
      handle(21), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, handle(22), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      handle(23), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, handle(24), 30);
  EXPECT_EQ(s,
            "conv_dgrad dy[8,32,14,14]f16 nhwc w[32,1,3,3]f16 nchw pad[0,0]:[1,1] str[1,1] dil[1,1] g32 acc:f32 -> "
            "dx[8,32,15,15]f16 nhwc");
}

TEST(Problem, OddStridesAreSpelledOut) {
  TensorState t{};
  t.dtype = CUDNN_DATA_FLOAT;
  t.nbdims = 4;
  int64_t dims[4] = {2, 3, 4, 5}, strides[4] = {100, 20, 5, 1};
  for (int i = 0; i < 4; ++i) {
    t.dims[i] = dims[i];
    t.strides[i] = strides[i];
  }
  trace::ProblemDesc d{};
  d.op = uint16_t(trace::ProblemOp::kPointwise);
  d.n_tensors = 1;
  problem_tensor(d.tensors[0], trace::TensorRole::kA, t);
  EXPECT_EQ(text_of(d), "pw a[2,3,4,5]f32 str[100,20,5,1]");
  // The same dims packed channels-last are named, and the strides are no longer part of it.
  int64_t last[4] = {60, 1, 15, 3};
  for (int i = 0; i < 4; ++i) t.strides[i] = last[i];
  trace::ProblemDesc nhwc{};
  nhwc.op = d.op;
  nhwc.n_tensors = 1;
  problem_tensor(nhwc.tensors[0], trace::TensorRole::kA, t);
  EXPECT_EQ(text_of(nhwc), "pw a[2,3,4,5]f32 nhwc");
  EXPECT_NE(trace::problem_hash(nhwc), trace::problem_hash(d));
}

TEST(Problem, InterningComparesContentAndIgnoresTheMathTypeInTheHash) {
  trace::ProblemDesc a{};
  a.op = uint16_t(trace::ProblemOp::kBnFwdTrain);
  a.n_params = 2;
  a.params[0] = 1;
  a.params[1] = -1;
  a.math_type = -1;
  trace::ProblemDesc b = a;
  b.params[0] = 2;
  uint64_t ha = 0, hb = 0, ha2 = 0;
  uint32_t ia = intern_problem(t_state, a, &ha);
  uint32_t ib = intern_problem(t_state, b, &hb);
  EXPECT_NE(ia, 0u);
  EXPECT_NE(ib, 0u);
  EXPECT_NE(ia, ib);
  EXPECT_NE(ha, hb);
  EXPECT_EQ(intern_problem(t_state, a, &ha2), ia);
  EXPECT_EQ(ha2, ha);
  EXPECT_EQ(problem_hash_of(ia), ha);
  // Another math type: recorded as another entry of the same problem.
  trace::ProblemDesc c = a;
  c.math_type = 1;
  uint64_t hc = 0;
  uint32_t ic = intern_problem(t_state, c, &hc);
  EXPECT_NE(ic, ia);
  EXPECT_EQ(hc, ha);
}

TEST(Problem, LegacyAndBackendGiveTheSameProblem) {
  backend_tensor(handle(41), {16, 64, 32, 32}, {65536, 1024, 32, 1}, 1);
  backend_tensor(handle(42), {128, 64, 3, 3}, {576, 9, 3, 1}, 2);
  backend_tensor(handle(43), {16, 128, 16, 16}, {32768, 256, 16, 1}, 3);
  backend_conv(handle(44), {1, 1}, {1, 1}, {2, 2}, {1, 1});
  std::string backend = backend_graph_signature(
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, handle(41),
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, handle(42), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, handle(43),
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, handle(44), 50);
  trace::ProblemDesc backend_desc{};
  int64_t unused_align = 0;
  ASSERT_TRUE(graph_problem(backend_desc, desc_find(handle(50 + 2))->u.graph, &unused_align));

  const int xd[4] = {16, 64, 32, 32}, wd[4] = {128, 64, 3, 3}, yd[4] = {16, 128, 16, 16};
  const int pad[2] = {1, 1}, stride[2] = {2, 2}, dil[2] = {1, 1};
  set_legacy_tensor(handle(61), CUDNN_DATA_FLOAT, 4, xd, nullptr, CUDNN_TENSOR_NCHW);
  set_legacy_filter(handle(62), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wd);
  set_legacy_tensor(handle(63), CUDNN_DATA_FLOAT, 4, yd, nullptr, CUDNN_TENSOR_NCHW);
  set_legacy_conv(handle(64), 2, pad, stride, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  ProblemRef legacy = legacy_conv_problem(ProblemOp::kConvFwd, handle(61), handle(62), handle(64), handle(63));
  EXPECT_NE(legacy.id, 0u);
  EXPECT_EQ(legacy.hash, trace::problem_hash(backend_desc)) << backend;
  // Served from the per-thread cache the second time, with the same answer.
  ProblemRef again = legacy_conv_problem(ProblemOp::kConvFwd, handle(61), handle(62), handle(64), handle(63));
  EXPECT_EQ(again.id, legacy.id);
  EXPECT_EQ(again.hash, legacy.hash);
  // A different shape is a different problem.
  const int xd2[4] = {8, 64, 32, 32}, yd2[4] = {8, 128, 16, 16};
  set_legacy_tensor(handle(61), CUDNN_DATA_FLOAT, 4, xd2, nullptr, CUDNN_TENSOR_NCHW);
  set_legacy_tensor(handle(63), CUDNN_DATA_FLOAT, 4, yd2, nullptr, CUDNN_TENSOR_NCHW);
  EXPECT_NE(legacy_conv_problem(ProblemOp::kConvFwd, handle(61), handle(62), handle(64), handle(63)).hash, legacy.hash);
}

TEST(Mirror, MillionsOfShortLivedDescriptorsUseBoundedMemoryAndIdsStayUnique) {
  uint32_t last_id = 0;
  for (uintptr_t i = 0; i < 2'000'000; ++i) {
    // 64 alive at a time, addresses reused the way malloc reuses them.
    void* d = handle(100000 + (i % 64));
    if (i >= 64) desc_destroy(d);
    DescEntry* e = desc_create(d, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    ASSERT_NE(e, nullptr) << "mirror full after " << i << " descriptors";
    ASSERT_GT(e->id, last_id);
    last_id = e->id;
  }
  EXPECT_EQ(desc_find(handle(100000 + 5))->kind, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  desc_destroy(handle(100000 + 5));
  EXPECT_EQ(desc_find(handle(100000 + 5)), nullptr);
}

TEST(Mirror, MissedDestroyIsRepairedWhenTheAddressComesBack) {
  void* d = handle(900001);
  DescEntry* first = desc_create(d, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  ASSERT_NE(first, nullptr);
  first->u.engine.global_index = 7;
  uint32_t first_id = first->id;
  DescEntry* second = desc_create(d, CUDNN_BACKEND_TENSOR_DESCRIPTOR);  // cuDNN reused the address
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(desc_find(d), second);
  EXPECT_EQ(second->kind, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  EXPECT_GT(second->id, first_id);             // a new descriptor, a new id
  EXPECT_EQ(second->u.tensor.nbdims, 0);       // nothing of the old state survives
}

TEST(Alignment, SmallestPowerOfTwoOfThePointers) {
  const void* ptrs[3] = {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x1008), nullptr};
  EXPECT_EQ(min_alignment(ptrs, 3), 8u);
  const void* aligned[1] = {reinterpret_cast<void*>(0x7f0000000000)};
  EXPECT_EQ(min_alignment(aligned, 1), 256u);
}

}  // namespace
}  // namespace cuprobe::shim
