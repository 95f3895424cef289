// Typed problems on the reading side (issue 12): JSON Lines of trace format 1 (problems, knobs and
// algorithm results as strings) stay readable; format-2 problem lines give typed problems whose
// text is rendered in one place (common/problem_text.h) and whose layer does not depend on the
// input size; search records take legacy results from typed records.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "problem_text.h"
#include "trace/problem_view.h"
#include "trace/reader.h"
#include "trace/searches.h"

namespace cuprobe {
namespace {

using Traces = std::vector<std::unique_ptr<reader::Trace>>;

Traces read_ok(const std::string& text) {
  auto r = reader::read_jsonl_text(text, "test.jsonl");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  return std::move(*r);
}

const char* kProcess = R"({"type":"process","pid":7,"start_ns":1000,"state":"exited","end_ns":90000000})";
const std::string kConv =
    "conv_fwd x[16,64,32,32]f32 nchw w[64,64,3,3]f32 nchw pad[1,1] str[1,1] dil[1,1] g1 acc:f32 -> "
    "y[16,64,32,32]f32 nchw";

// A problem as the shim builds it from descriptors: conv forward, NCHW, 3x3, padding 1.
trace::ProblemDesc conv_desc(int64_t batch, int64_t channels, int64_t side) {
  trace::ProblemDesc d{};
  d.op = uint16_t(trace::ProblemOp::kConvFwd);
  d.flags = trace::kProblemHasConv;
  d.math_type = -1;
  d.n_tensors = 3;
  const int64_t shapes[3][4] = {{batch, channels, side, side}, {channels, channels, 3, 3}, {batch, channels, side, side}};
  const trace::TensorRole roles[3] = {trace::TensorRole::kX, trace::TensorRole::kW, trace::TensorRole::kY};
  for (int i = 0; i < 3; ++i) {
    trace::ProblemTensor& t = d.tensors[i];
    t.role = uint8_t(roles[i]);
    t.dtype = 0;  // CUDNN_DATA_FLOAT
    t.nbdims = 4;
    t.layout = uint8_t(trace::Layout::kChannelsFirst);
    for (int k = 0; k < 4; ++k) t.dims[k] = shapes[i][k];
  }
  d.conv.mode = 1;  // cross-correlation
  d.conv.compute = 0;
  d.conv.spatial = 2;
  d.conv.groups = 1;
  for (int k = 0; k < 2; ++k) d.conv.pre[k] = d.conv.post[k] = d.conv.stride[k] = d.conv.dilation[k] = 1;
  return d;
}

std::string render(const trace::ProblemDesc& d) {
  char buf[1024];
  render_problem(d, buf, sizeof buf);
  return buf;
}

// The line `cuprobe dump` writes for a problem (its "desc" the typed values).
std::string problem_line(const trace::ProblemDesc& d) {
  std::string tensors;
  for (int i = 0; i < d.n_tensors; ++i) {
    const auto& t = d.tensors[i];
    tensors += fmt::format("{}{{\"role\":{},\"dtype\":{},\"layout\":{},\"dims\":[{},{},{},{}],\"strides\":[0,0,0,0]}}",
                           i ? "," : "", t.role, t.dtype, t.layout, t.dims[0], t.dims[1], t.dims[2], t.dims[3]);
  }
  return fmt::format(
      "{{\"type\":\"problem\",\"pid\":7,\"hash\":\"0x{:x}\",\"text\":\"{}\",\"desc\":{{\"op\":{},\"flags\":{},"
      "\"math_type\":-1,\"conv\":{{\"mode\":1,\"compute\":0,\"spatial\":2,\"groups\":1,\"pre\":[1,1],\"post\":[1,1],"
      "\"stride\":[1,1],\"dilation\":[1,1]}},\"tensors\":[{}]}}}}",
      trace::problem_hash(d), render(d), d.op, d.flags, tensors);
}

TEST(TypedProblems, TheTextIsRenderedFromTypedValuesAsFormatOneWroteIt) {
  EXPECT_EQ(render(conv_desc(16, 64, 32)), kConv);
}

TEST(TypedProblems, AFormatOneDumpIsReadWithItsProblemTextHashKnobsAndResults) {
  std::string text = std::string(kProcess) + "\n" +
                     R"({"type":"api","pid":7,"name":"cudnnFindConvolutionForwardAlgorithm","library":"cudnn","flags":16384,)"
                     R"("fields":"problem:s,problem_hash:x,returned:i,best:i,results:s,math:i"})" "\n" +
                     fmt::format(R"({{"type":"call","api":"cudnnFindConvolutionForwardAlgorithm","ret":0,"ts_ns":2000,)"
                                 R"("dur_ns":100,"pid":7,"tid":7,"device":0,"problem":"{}","problem_hash":"0xabc123",)"
                                 R"("returned":2,"best":1,"results":"1:0:0.5000:1024:1:0;0:0:0.7500:0:1:1","math":0}})",
                                 kConv) +
                     "\n" +
                     fmt::format(R"({{"type":"call","api":"cudnnBackendFinalize","ret":0,"ts_ns":3000,"dur_ns":10,)"
                                 R"("pid":7,"tid":7,"device":0,"desc":5,"kind":5,"problem":"{}","problem_hash":"0xabc123",)"
                                 R"("engine":3,"knobs":"tile_size=8,stages=4"}})",
                                 kConv) +
                     "\n";
  Traces traces = read_ok(text);
  ASSERT_EQ(traces.size(), 1u);
  const reader::Trace& t = *traces[0];
  // The role flags of format 2 come from the API table by name.
  const reader::Api* find = nullptr;
  for (const auto& a : t.apis()) {
    if (a.name == "cudnnFindConvolutionForwardAlgorithm") find = &a;
  }
  ASSERT_NE(find, nullptr);
  EXPECT_TRUE(find->flags & trace::kApiLegacyFind);
  ASSERT_EQ(find->fields[size_t(find->field_index("problem"))].type, 'q');
  ASSERT_EQ(find->fields[size_t(find->field_index("results"))].type, 'r');
  std::vector<reader::SearchRecord> searches;
  int calls = 0;
  std::string knobs;
  t.for_each_event([&](const reader::Event& e) {
    ++calls;
    const reader::Api* a = t.api(e.api);
    int k = a->field_index("knobs");
    if (k >= 0 && k < e.nargs) knobs = t.knobs_text(reader::KnobsId(e.args[k]));
    int q = a->field_index("problem");
    ASSERT_GE(q, 0);
    const reader::Problem* p = t.problem(reader::ProblemId(e.args[q]));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->text, kConv);
    EXPECT_EQ(p->hash, 0xabc123u);
    EXPECT_FALSE(p->typed);  // a format-1 problem is its text only
    EXPECT_EQ(reader::layer_key(*p), 0xabc123u | 1);
    EXPECT_TRUE(reader::problem_shape(p).dims.empty());
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(knobs, "tile_size=8,stages=4");
  // The legacy search (the plan's finalize opens a backend selection of its own, never completed).
  reader::SearchTracker tracker(t, [&](const reader::SearchRecord& r) {
    if (!r.backend()) searches.push_back(r);
  });
  t.for_each_event([&](const reader::Event& e) { tracker.on_event(e); });
  tracker.finish();
  ASSERT_EQ(searches.size(), 1u);
  EXPECT_EQ(searches[0].mode, reader::SearchMode::kBenchmark);
  EXPECT_STREQ(reader::name_of(searches[0].mode), "benchmark");
  ASSERT_EQ(searches[0].candidates.size(), 2u);
  EXPECT_EQ(searches[0].candidates[0].engine, 1);
  EXPECT_DOUBLE_EQ(searches[0].candidates[0].time_ms, 0.5);
  EXPECT_EQ(searches[0].candidates[0].workspace, 1024u);
  EXPECT_EQ(searches[0].candidates[1].knobs, "math=1");
  EXPECT_EQ(searches[0].problem_hash, 0xabc123u);
}

TEST(TypedProblems, ProblemLinesGiveTypedProblemsAndLayersIgnoreTheInputSize) {
  trace::ProblemDesc big = conv_desc(32, 64, 56), small = conv_desc(8, 64, 28), wide = conv_desc(32, 128, 56);
  std::string text = std::string(kProcess) + "\n" + problem_line(big) + "\n" + problem_line(small) + "\n" +
                     problem_line(wide) + "\n";
  Traces traces = read_ok(text);
  ASSERT_EQ(traces.size(), 1u);
  const reader::Trace& t = *traces[0];
  std::vector<const reader::Problem*> problems;
  for (const auto& p : t.problems()) {
    if (p.id) problems.push_back(&p);
  }
  ASSERT_EQ(problems.size(), 3u);
  for (const auto* p : problems) EXPECT_TRUE(p->typed);
  EXPECT_EQ(problems[0]->text, render(big));
  EXPECT_EQ(problems[0]->hash, trace::problem_hash(big));
  EXPECT_NE(problems[0]->hash, problems[1]->hash);
  EXPECT_EQ(reader::layer_key(*problems[0]), reader::layer_key(*problems[1]));  // batch and size
  EXPECT_NE(reader::layer_key(*problems[0]), reader::layer_key(*problems[2]));  // channels
  reader::ProblemShape s = reader::problem_shape(problems[1]);
  EXPECT_EQ(s.op, "conv_fwd");
  EXPECT_EQ(s.dims, (std::vector<int64_t>{8, 64, 28, 28}));
  EXPECT_EQ(s.dtype, "f32");
}

TEST(TypedProblems, ALayerKeepsItsFiltersStridesAndChannels) {
  auto layer = [](const trace::ProblemDesc& d) {
    reader::Problem p;
    p.id = 1;
    p.typed = true;
    p.desc = d;
    p.hash = trace::problem_hash(d);
    return reader::layer_key(p);
  };
  trace::ProblemDesc base = conv_desc(32, 64, 96);
  EXPECT_EQ(layer(base), layer(conv_desc(8, 64, 184)));
  trace::ProblemDesc filters = base;
  filters.tensors[1].dims[0] = 128;
  EXPECT_NE(layer(base), layer(filters));
  trace::ProblemDesc stride = base;
  stride.conv.stride[0] = stride.conv.stride[1] = 2;
  EXPECT_NE(layer(base), layer(stride));
  trace::ProblemDesc dgrad = base;
  dgrad.op = uint16_t(trace::ProblemOp::kConvDgrad);
  EXPECT_NE(layer(base), layer(dgrad));
  EXPECT_NE(layer(trace::ProblemDesc{}), 0u);
}

TEST(TypedProblems, PackedRecordsRoundTrip) {
  trace::ProblemDesc d = conv_desc(16, 64, 32);
  d.tensors[2].layout = uint8_t(trace::Layout::kStrided);
  for (int k = 0; k < 4; ++k) d.tensors[2].strides[k] = 1000 - k;
  d.n_fused = 1;
  d.fused[0] = trace::FusedOp{uint16_t(trace::ProblemOp::kPointwise), 0, 7};
  std::vector<char> buf(trace::packed_problem_size(d));
  trace::pack_problem(d, buf.data());
  trace::ProblemDesc back;
  ASSERT_TRUE(trace::unpack_problem(buf.data(), uint32_t(buf.size()), &back));
  EXPECT_EQ(std::memcmp(&back, &d, sizeof d), 0);
  EXPECT_EQ(render(back), render(d));
  // Cut short or with impossible counts: refused, never read past the end.
  EXPECT_FALSE(trace::unpack_problem(buf.data(), uint32_t(buf.size() - 1), &back));
  buf[2] = 9;  // n_tensors
  EXPECT_FALSE(trace::unpack_problem(buf.data(), uint32_t(buf.size()), &back));
}

TEST(TypedProblems, TheHashCoversWhatTheTextShowsAndNotTheMathType) {
  trace::ProblemDesc a = conv_desc(16, 64, 32);
  trace::ProblemDesc b = a;
  b.math_type = 1;
  EXPECT_EQ(trace::problem_hash(a), trace::problem_hash(b));
  b.conv.post[0] = 0;  // asymmetric padding shows in the text, and in the hash
  EXPECT_NE(render(a), render(b));
  EXPECT_NE(trace::problem_hash(a), trace::problem_hash(b));
  trace::ProblemDesc c = a;
  c.tensors[0].strides[0] = 99;  // strides of a named layout are not part of it
  EXPECT_EQ(trace::problem_hash(a), trace::problem_hash(c));
}

}  // namespace
}  // namespace cuprobe

namespace cuprobe {
namespace {

// Issue 13: a 1-D convolution reaches cuDNN as 2-D with height 1 (x[16,64,1,2600], a 1x3 filter,
// no padding, stride or dilation in the height); it is shown, and measured, as 1-D.
trace::ProblemDesc conv1d_desc(int64_t length, int64_t filter_h, int32_t pad_h) {
  trace::ProblemDesc d = conv_desc(16, 64, 1);
  for (int i = 0; i < 3; ++i) d.tensors[i].dims[3] = i == 1 ? 3 : length;
  d.tensors[1].dims[2] = filter_h;
  d.conv.pre[0] = d.conv.post[0] = pad_h;
  return d;
}

TEST(TypedProblems, AOneDConvolutionIsShownWithoutItsDummyHeight) {
  trace::ProblemDesc d = conv1d_desc(2600, 1, 0);
  EXPECT_EQ(render(d),
            "conv_fwd x[16,64,2600]f32 ncw w[64,64,3]f32 ncw pad[1] str[1] dil[1] g1 acc:f32 -> y[16,64,2600]f32 ncw");
  reader::Problem p;
  p.typed = true;
  p.desc = d;
  EXPECT_EQ(reader::problem_shape(&p).dims, (std::vector<int64_t>{16, 64, 2600}));
  // A genuine 2-D convolution on height-1 inputs: a 3x3 filter padded to keep the height.
  trace::ProblemDesc two_d = conv1d_desc(2600, 3, 1);
  EXPECT_FALSE(conv_dummy_height(two_d));
  EXPECT_NE(render(two_d).find("x[16,64,1,2600]f32 nchw w[64,64,3,3]"), std::string::npos) << render(two_d);
  p.desc = two_d;
  EXPECT_EQ(reader::problem_shape(&p).dims, (std::vector<int64_t>{16, 64, 1, 2600}));
  // Height 1 with a 1xk filter but a stride in the height is not PyTorch's dummy dimension either.
  trace::ProblemDesc strided = conv1d_desc(2600, 1, 0);
  strided.conv.stride[0] = 2;
  EXPECT_FALSE(conv_dummy_height(strided));
}

// Matmul and attention graphs are not convolutions: their tensors carry no convolution layout
// names (issue 33). Packed row-major shows no layout, anything else its strides.
TEST(TypedProblems, AMatmulsTensorsAreShownWithoutConvolutionLayouts) {
  trace::ProblemDesc d{};
  d.op = uint16_t(trace::ProblemOp::kMatmul);
  d.math_type = -1;
  d.n_tensors = 3;
  auto set = [&](int i, trace::TensorRole role, int dtype, trace::Layout layout, std::vector<int64_t> dims,
                 std::vector<int64_t> strides) {
    trace::ProblemTensor& t = d.tensors[i];
    t.role = uint8_t(role);
    t.dtype = int8_t(dtype);
    t.nbdims = uint8_t(dims.size());
    t.layout = uint8_t(layout);
    for (size_t k = 0; k < dims.size(); ++k) {
      t.dims[k] = dims[k];
      t.strides[k] = strides.empty() ? 0 : strides[k];
    }
  };
  const int kBf16 = 9, kF32 = 0;  // CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT
  set(0, trace::TensorRole::kA, kBf16, trace::Layout::kChannelsFirst, {3, 4, 1024, 128}, {});
  // K transposed: a view of a packed [3,4,1024,128] tensor.
  set(1, trace::TensorRole::kB, kBf16, trace::Layout::kStrided, {3, 4, 128, 1024}, {524288, 131072, 1, 128});
  set(2, trace::TensorRole::kOut, kF32, trace::Layout::kChannelsFirst, {3, 4, 1024, 1024}, {});
  EXPECT_EQ(render(d),
            "matmul a[3,4,1024,128]bf16 b[3,4,128,1024]bf16 str[524288,131072,1,128] -> out[3,4,1024,1024]f32");
  // A 3-D column-major operand (what the shim's layout detection calls channels-last): its strides.
  set(1, trace::TensorRole::kB, kBf16, trace::Layout::kChannelsLast, {2, 64, 32}, {});
  EXPECT_EQ(render(d), "matmul a[3,4,1024,128]bf16 b[2,64,32]bf16 str[2048,1,64] -> out[3,4,1024,1024]f32");
  // A norm keeps the layout names (a batch norm over NHWC data is that), as do pointwise graphs.
  d.op = uint16_t(trace::ProblemOp::kNormFwd);
  d.n_tensors = 1;
  set(0, trace::TensorRole::kA, kF32, trace::Layout::kChannelsLast, {8, 64, 16, 16}, {});
  EXPECT_EQ(render(d), "norm_fwd a[8,64,16,16]f32 nhwc");
  // Operations cuDNN 9 added are named where they are fused (issue 33: cudnn-frontend's samples
  // showed them as "+op").
  d.op = uint16_t(trace::ProblemOp::kMatmul);
  d.n_fused = 2;
  d.fused[0] = trace::FusedOp{uint16_t(trace::ProblemOp::kBlockScaleDequantize), 0, -1};
  d.fused[1] = trace::FusedOp{uint16_t(trace::ProblemOp::kPagedCacheLoad), 0, -1};
  EXPECT_EQ(render(d), "matmul a[8,64,16,16]f32 str[16384,1,1024,64] +block_scale_dequant +paged_cache_load");
}

// Attention tensors [batch, heads, sequence, head size] in PyTorch's memory orders are named
// (bshd: a Linear's output viewed as heads; sbhd: nn.MultiheadAttention's sequence-first views);
// any other strides are shown; a cuBLASLt matmul reads as BLAS states it (issue 33).
TEST(TypedProblems, AttentionOrdersAreNamedAndCublasLtMatmulsReadAsBlasStatesThem) {
  trace::ProblemDesc d{};
  d.op = uint16_t(trace::ProblemOp::kSdpaFwd);
  d.math_type = -1;
  d.n_tensors = 4;
  d.n_params = 7;
  d.params[0] = 1;
  const trace::TensorRole roles[4] = {trace::TensorRole::kQ, trace::TensorRole::kK, trace::TensorRole::kV,
                                      trace::TensorRole::kO};
  auto set = [&](int i, std::vector<int64_t> strides) {
    trace::ProblemTensor& t = d.tensors[i];
    t.role = uint8_t(roles[i]);
    t.dtype = 9;  // bf16
    t.nbdims = 4;
    t.layout = uint8_t(trace::Layout::kStrided);
    const int64_t dims[4] = {2, 8, 128, 64};
    for (int k = 0; k < 4; ++k) {
      t.dims[k] = dims[k];
      t.strides[k] = strides[k];
    }
  };
  set(0, {128 * 8 * 64, 64, 8 * 64, 1});       // bshd
  set(1, {8 * 64, 64, 2 * 8 * 64, 1});         // sbhd
  set(2, {128 * 3 * 8 * 64, 64, 3 * 8 * 64, 1});  // v of a fused qkv projection: not packed
  set(3, {128 * 8 * 64, 64, 8 * 64, 1});
  EXPECT_EQ(render(d),
            "sdpa_fwd q[2,8,128,64]bf16 bshd k[2,8,128,64]bf16 sbhd v[2,8,128,64]bf16 str[196608,64,1536,1] -> "
            "o[2,8,128,64]bf16 bshd causal");

  trace::ProblemDesc m{};
  m.op = uint16_t(trace::ProblemOp::kBlasLtMatmul);
  m.math_type = -1;
  m.n_tensors = 4;
  auto lt = [&](int i, trace::TensorRole role, int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t off) {
    trace::ProblemTensor& t = m.tensors[i];
    t.role = uint8_t(role);
    t.dtype = 9;
    t.nbdims = 3;
    t.layout = uint8_t(trace::Layout::kStrided);
    t.dims[0] = batch;
    t.dims[1] = rows;
    t.dims[2] = cols;
    t.strides[0] = off;
    t.strides[1] = 1;
    t.strides[2] = ld;
  };
  lt(0, trace::TensorRole::kA, 1, 768, 3072, 768, 0);  // the weight, transposed
  lt(1, trace::TensorRole::kB, 1, 768, 512, 1024, 0);  // activations with a wider leading dimension
  lt(2, trace::TensorRole::kC, 1, 3072, 512, 3072, 0);
  lt(3, trace::TensorRole::kOut, 1, 3072, 512, 3072, 0);
  m.n_params = 7;
  m.params[0] = 1;    // CUBLAS_OP_T
  m.params[2] = 77;   // CUBLAS_COMPUTE_32F_FAST_TF32
  m.params[4] = 36;   // CUBLASLT_EPILOGUE_GELU_BIAS
  m.params[6] = -1;
  EXPECT_EQ(render(m),
            "blaslt_matmul m3072 n512 k768 a:bf16^T b:bf16,ld1024 c:bf16 -> d:bf16 acc:f32_fast_tf32 +gelu_bias");
  lt(0, trace::TensorRole::kA, 4, 512, 64, 512, 32768);  // strided batches, one with a gap
  lt(1, trace::TensorRole::kB, 4, 64, 512, 64, 40000);
  lt(2, trace::TensorRole::kC, 4, 512, 512, 512, 262144);
  lt(3, trace::TensorRole::kOut, 4, 512, 512, 512, 262144);
  m.params[0] = 0;
  m.params[2] = 68;
  m.params[4] = 1;
  EXPECT_EQ(render(m), "blaslt_matmul m512 n512 k64 batch4 a:bf16 b:bf16,bstride40000 c:bf16 -> d:bf16 acc:f32");
}

}  // namespace
}  // namespace cuprobe
