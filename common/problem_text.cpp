// Problem, knob and data type texts; see problem_text.h.
#include "problem_text.h"

#include <cudnn.h>

#include <cstring>

namespace cuprobe {

namespace {

using trace::Layout;
using trace::ProblemConv;
using trace::ProblemDesc;
using trace::ProblemOp;
using trace::ProblemTensor;
using trace::TensorRole;

// Appends to a fixed buffer, counting what did not fit.
class Out {
 public:
  Out(char* buf, size_t cap) : buf_(buf), cap_(cap) {}
  void ch(char c) {
    if (len_ + 1 < cap_) buf_[len_] = c;
    ++len_;
  }
  void text(const char* s) {
    for (; s && *s; ++s) ch(*s);
  }
  void num(int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    do {
      tmp[n++] = char('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) ch('-');
    while (n > 0) ch(tmp[--n]);
  }
  template <typename T>
  void list(const T* v, int n) {
    ch('[');
    for (int i = 0; i < n; ++i) {
      if (i) ch(',');
      num(int64_t(v[i]));
    }
    ch(']');
  }
  size_t finish() {
    if (cap_ > 0) buf_[len_ < cap_ ? len_ : cap_ - 1] = 0;
    return len_;
  }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
};

const char* layout_text(const ProblemTensor& t) {
  static const char* const kFirst[6] = {nullptr, nullptr, nullptr, "ncw", "nchw", "ncdhw"};
  static const char* const kLast[6] = {nullptr, nullptr, nullptr, "nwc", "nhwc", "ndhwc"};
  bool named_rank = t.nbdims >= 3 && t.nbdims <= 5;
  switch (Layout(t.layout)) {
    case Layout::kChannelsFirst: return named_rank ? kFirst[t.nbdims] : nullptr;
    case Layout::kChannelsLast: return named_rank ? kLast[t.nbdims] : nullptr;
    case Layout::kVectC: return "nchw_vect_c";
    default: return nullptr;
  }
}

// `skip`: a dimension left out of the text (the dummy height of a 1-D convolution), -1 none.
void tensor(Out& o, const ProblemTensor& t, int skip = -1) {
  int n = t.nbdims <= trace::kProblemMaxDims ? t.nbdims : trace::kProblemMaxDims;
  int64_t dims[trace::kProblemMaxDims], strides[trace::kProblemMaxDims];
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (i == skip) continue;
    dims[m] = t.dims[i];
    strides[m] = t.strides[i];
    ++m;
  }
  ProblemTensor shown = t;  // for the layout's name, which follows the number of dimensions shown
  shown.nbdims = uint8_t(m);
  o.text(tensor_role_text(TensorRole(t.role)));
  o.list(dims, m);
  o.text(dtype_text(t.dtype));
  o.ch(' ');
  if (const char* layout = layout_text(shown)) {
    o.text(layout);
  } else {
    o.text("str");
    o.list(strides, m);
  }
}

// A tensor of a matmul or attention graph: the convolution layouts' names mean nothing there. Packed row-major
// (the last dimension contiguous: what the trace calls channels-first) shows no layout; anything
// else shows its strides, reconstructed for a packed channels-last tensor.
// An attention tensor [batch, heads, sequence, head size] packed in another order than its dims:
// "bshd" (PyTorch's [batch, sequence, heads, head size] memory, what a Linear's output viewed as
// heads gives) or "sbhd" (sequence first, nn.MultiheadAttention's); nullptr otherwise (strides).
const char* attention_order(const ProblemTensor& t) {
  auto role = TensorRole(t.role);
  if (t.nbdims != 4 || Layout(t.layout) != Layout::kStrided ||
      !(role == TensorRole::kQ || role == TensorRole::kK || role == TensorRole::kV || role == TensorRole::kO ||
        role == TensorRole::kDo)) {
    return nullptr;
  }
  const int64_t b = t.dims[0], h = t.dims[1], s = t.dims[2], d = t.dims[3];
  const int64_t* st = t.strides;
  if (st[3] != 1 || st[1] != d) return nullptr;
  if (st[2] == h * d && st[0] == s * h * d) return "bshd";
  if (st[0] == h * d && st[2] == b * h * d) return "sbhd";
  return nullptr;
}

void plain_tensor(Out& o, const ProblemTensor& t) {
  int n = t.nbdims <= trace::kProblemMaxDims ? t.nbdims : trace::kProblemMaxDims;
  o.text(tensor_role_text(TensorRole(t.role)));
  o.list(t.dims, n);
  o.text(dtype_text(t.dtype));
  if (Layout(t.layout) == Layout::kChannelsFirst) return;
  if (const char* order = attention_order(t)) {
    o.ch(' ');
    o.text(order);
    return;
  }
  int64_t strides[trace::kProblemMaxDims];
  for (int i = 0; i < n; ++i) strides[i] = t.strides[i];
  if (Layout(t.layout) == Layout::kChannelsLast && n >= 3) {
    // Packed in the order 0, 2, ..., n-1, 1 (outermost first): dimension 1 is contiguous.
    strides[1] = 1;
    int64_t s = t.dims[1] > 0 ? t.dims[1] : 1;
    for (int i = n - 1; i >= 2; --i) {
      strides[i] = s;
      s *= t.dims[i] > 0 ? t.dims[i] : 1;
    }
    strides[0] = s;
  }
  o.text(" str");
  o.list(strides, n);
}

// `first`: the first spatial dimension shown (1 for a 1-D convolution's dummy height).
void conv_params(Out& o, const ProblemConv& c, int first = 0) {
  int n = (c.spatial > 0 && c.spatial <= 3 ? c.spatial : 2) - first;
  bool symmetric = true;
  for (int i = 0; i < n; ++i) symmetric = symmetric && c.pre[first + i] == c.post[first + i];
  o.text("pad");
  o.list(c.pre + first, n);
  if (!symmetric) {
    o.ch(':');
    o.list(c.post + first, n);
  }
  o.text(" str");
  o.list(c.stride + first, n);
  o.text(" dil");
  o.list(c.dilation + first, n);
  o.text(" g");
  o.num(c.groups > 0 ? c.groups : 1);
  o.text(" acc:");
  o.text(dtype_text(c.compute));
  if (c.mode == CUDNN_CONVOLUTION) o.text(" flip");
}

const char* pointwise_text(int mode) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD: return "add";
    case CUDNN_POINTWISE_MUL: return "mul";
    case CUDNN_POINTWISE_SUB: return "sub";
    case CUDNN_POINTWISE_DIV: return "div";
    case CUDNN_POINTWISE_MAX: return "max";
    case CUDNN_POINTWISE_MIN: return "min";
    case CUDNN_POINTWISE_SQRT: return "sqrt";
    case CUDNN_POINTWISE_EXP: return "exp";
    case CUDNN_POINTWISE_IDENTITY: return "identity";
    case CUDNN_POINTWISE_RELU_FWD: return "relu";
    case CUDNN_POINTWISE_TANH_FWD: return "tanh";
    case CUDNN_POINTWISE_SIGMOID_FWD: return "sigmoid";
    case CUDNN_POINTWISE_GELU_FWD: return "gelu";
    case CUDNN_POINTWISE_SWISH_FWD: return "swish";
    case CUDNN_POINTWISE_RELU_BWD: return "relu_bwd";
    case CUDNN_POINTWISE_GELU_BWD: return "gelu_bwd";
    case CUDNN_POINTWISE_ADD_SQUARE: return "add_square";
    case CUDNN_POINTWISE_MOD: return "mod";
    case CUDNN_POINTWISE_POW: return "pow";
    case CUDNN_POINTWISE_ABS: return "abs";
    case CUDNN_POINTWISE_LOG: return "log";
    case CUDNN_POINTWISE_NEG: return "neg";
    case CUDNN_POINTWISE_RSQRT: return "rsqrt";
    case CUDNN_POINTWISE_ERF: return "erf";
    case CUDNN_POINTWISE_RECIPROCAL: return "reciprocal";
    case CUDNN_POINTWISE_GELU_APPROX_TANH_FWD: return "gelu_tanh";
    case CUDNN_POINTWISE_ELU_FWD: return "elu";
    case CUDNN_POINTWISE_SOFTPLUS_FWD: return "softplus";
    case CUDNN_POINTWISE_TANH_BWD: return "tanh_bwd";
    case CUDNN_POINTWISE_SIGMOID_BWD: return "sigmoid_bwd";
    case CUDNN_POINTWISE_SWISH_BWD: return "swish_bwd";
    case CUDNN_POINTWISE_GELU_APPROX_TANH_BWD: return "gelu_tanh_bwd";
    case CUDNN_POINTWISE_CMP_EQ: return "cmp_eq";
    case CUDNN_POINTWISE_CMP_NEQ: return "cmp_neq";
    case CUDNN_POINTWISE_CMP_GT: return "cmp_gt";
    case CUDNN_POINTWISE_CMP_GE: return "cmp_ge";
    case CUDNN_POINTWISE_CMP_LT: return "cmp_lt";
    case CUDNN_POINTWISE_CMP_LE: return "cmp_le";
    case CUDNN_POINTWISE_LOGICAL_AND: return "and";
    case CUDNN_POINTWISE_LOGICAL_OR: return "or";
    case CUDNN_POINTWISE_LOGICAL_NOT: return "not";
    case CUDNN_POINTWISE_GEN_INDEX: return "gen_index";
    case CUDNN_POINTWISE_BINARY_SELECT: return "select";
    default: return nullptr;
  }
}

const char* reduce_text(int mode) {
  switch (mode) {
    case CUDNN_REDUCE_TENSOR_ADD: return "add";
    case CUDNN_REDUCE_TENSOR_MUL: return "mul";
    case CUDNN_REDUCE_TENSOR_MIN: return "min";
    case CUDNN_REDUCE_TENSOR_MAX: return "max";
    case CUDNN_REDUCE_TENSOR_AMAX: return "amax";
    case CUDNN_REDUCE_TENSOR_AVG: return "avg";
    case CUDNN_REDUCE_TENSOR_NORM1: return "norm1";
    case CUDNN_REDUCE_TENSOR_NORM2: return "norm2";
    case CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS: return "mul_no_zeros";
    default: return "?";
  }
}

const char* bn_mode_text(int64_t mode) {
  switch (mode) {
    case CUDNN_BATCHNORM_PER_ACTIVATION: return "per_activation";
    case CUDNN_BATCHNORM_SPATIAL: return "spatial";
    case CUDNN_BATCHNORM_SPATIAL_PERSISTENT: return "spatial_persistent";
    default: return "mode?";
  }
}

const char* bn_ops_text(int64_t ops) {
  switch (ops) {
    case CUDNN_BATCHNORM_OPS_BN: return "bn";
    case CUDNN_BATCHNORM_OPS_BN_ACTIVATION: return "bn_act";
    case CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION: return "bn_add_act";
    default: return nullptr;
  }
}

const char* pool_mode_text(int64_t mode) {
  switch (mode) {
    case CUDNN_POOLING_MAX: return "max";
    case CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING: return "avg_incl_pad";
    case CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING: return "avg";
    case CUDNN_POOLING_MAX_DETERMINISTIC: return "max_det";
    default: return "pool?";
  }
}

const char* rnn_cell_text(int64_t cell) {
  switch (cell) {
    case CUDNN_RNN_RELU: return "rnn_relu";
    case CUDNN_RNN_TANH: return "rnn_tanh";
    case CUDNN_LSTM: return "lstm";
    case CUDNN_GRU: return "gru";
    default: return "cell?";
  }
}

bool is_conv(ProblemOp op) { return op == ProblemOp::kConvFwd || op == ProblemOp::kConvDgrad || op == ProblemOp::kConvWgrad; }

int64_t param(const ProblemDesc& p, int i) { return i < p.n_params && i < trace::kProblemMaxParams ? p.params[i] : 0; }

int clamp3(int64_t n) { return n < 0 ? 0 : (n > 3 ? 3 : int(n)); }

}  // namespace

const char* dtype_text(int dtype) {
  switch (dtype) {
    case CUDNN_DATA_FLOAT: return "f32";
    case CUDNN_DATA_DOUBLE: return "f64";
    case CUDNN_DATA_HALF: return "f16";
    case CUDNN_DATA_INT8: return "i8";
    case CUDNN_DATA_INT32: return "i32";
    case CUDNN_DATA_UINT8: return "u8";
    case CUDNN_DATA_BFLOAT16: return "bf16";
    case CUDNN_DATA_INT64: return "i64";
    case CUDNN_DATA_BOOLEAN: return "bool";
    case CUDNN_DATA_FP8_E4M3: return "fp8e4m3";
    case CUDNN_DATA_FP8_E5M2: return "fp8e5m2";
    case CUDNN_DATA_FAST_FLOAT_FOR_FP8: return "ffp8";
    case CUDNN_DATA_FP8_E8M0: return "fp8e8m0";
    case CUDNN_DATA_FP4_E2M1: return "fp4e2m1";
    case CUDNN_DATA_INT4: return "i4";
    case CUDNN_DATA_UINT4: return "u4";
    case CUDNN_DATA_UINT32: return "u32";
    case 20: return "cf32";  // CUDNN_DATA_COMPLEX_FP32 in cuDNN 9.19's cudnn_graph.h
    case 21: return "cf64";  // CUDNN_DATA_COMPLEX_FP64
    default: return "t?";
  }
}

const char* problem_op_text(ProblemOp op) {
  switch (op) {
    case ProblemOp::kConvFwd: return "conv_fwd";
    case ProblemOp::kConvDgrad: return "conv_dgrad";
    case ProblemOp::kConvWgrad: return "conv_wgrad";
    case ProblemOp::kPointwise: return "pw";
    case ProblemOp::kGenStats: return "genstats";
    case ProblemOp::kMatmul: return "matmul";
    case ProblemOp::kBnFinalize: return "bn_finalize";
    case ProblemOp::kReduce: return "reduce";
    case ProblemOp::kBnBwdWeights: return "bn_bwd_weights";
    case ProblemOp::kResampleFwd: return "resample_fwd";
    case ProblemOp::kResampleBwd: return "resample_bwd";
    case ProblemOp::kConcat: return "concat";
    case ProblemOp::kSignal: return "signal";
    case ProblemOp::kNormFwd: return "norm_fwd";
    case ProblemOp::kNormBwd: return "norm_bwd";
    case ProblemOp::kReshape: return "reshape";
    case ProblemOp::kRng: return "rng";
    case ProblemOp::kSdpaFwd: return "sdpa_fwd";
    case ProblemOp::kSdpaBwd: return "sdpa_bwd";
    case ProblemOp::kOtherOp: return "op";
    case ProblemOp::kPagedCacheLoad: return "paged_cache_load";
    case ProblemOp::kBlockScaleQuantize: return "block_scale_quant";
    case ProblemOp::kBlockScaleDequantize: return "block_scale_dequant";
    case ProblemOp::kExpandBandMatrix: return "expand_band";
    case ProblemOp::kContractBandMatrix: return "contract_band";
    case ProblemOp::kMoeGroupedMatmul: return "moe_grouped_matmul";
    case ProblemOp::kBnFwdTrain: return "bn_fwd_train";
    case ProblemOp::kBnBwd: return "bn_bwd";
    case ProblemOp::kBnFwdInfer: return "bn_fwd_infer";
    case ProblemOp::kRnn: return "rnn";
    case ProblemOp::kRnnFwd: return "rnn_fwd";
    case ProblemOp::kRnnBwdData: return "rnn_bwd_data";
    case ProblemOp::kRnnBwdWeights: return "rnn_bwd_weights";
    case ProblemOp::kPoolFwd: return "pool_fwd";
    case ProblemOp::kPoolBwd: return "pool_bwd";
    case ProblemOp::kCtcLoss: return "ctc_loss";
    case ProblemOp::kStSamplerFwd: return "st_sampler_fwd";
    case ProblemOp::kStSamplerBwd: return "st_sampler_bwd";
    case ProblemOp::kStGridFwd: return "st_grid_fwd";
    case ProblemOp::kStGridBwd: return "st_grid_bwd";
    case ProblemOp::kBlasLtMatmul: return "blaslt_matmul";
    default: return "op?";
  }
}

const char* tensor_role_text(TensorRole role) {
  switch (role) {
    case TensorRole::kX: return "x";
    case TensorRole::kW: return "w";
    case TensorRole::kY: return "y";
    case TensorRole::kDy: return "dy";
    case TensorRole::kDx: return "dx";
    case TensorRole::kDw: return "dw";
    case TensorRole::kA: return "a";
    case TensorRole::kB: return "b";
    case TensorRole::kC: return "c";
    case TensorRole::kOut: return "out";
    case TensorRole::kProbs: return "probs";
    case TensorRole::kQ: return "q";
    case TensorRole::kK: return "k";
    case TensorRole::kV: return "v";
    case TensorRole::kO: return "o";
    case TensorRole::kDo: return "do";
    case TensorRole::kScale: return "scale";
    case TensorRole::kBias: return "bias";
    default: return "?";
  }
}

// Attention recognized in a composite graph: q k v -> o (backward: q k v do), what its other
// operations make of it, and how many they are (they are part of the problem's identity).
static void attention(Out& o, const ProblemDesc& p) {
  ProblemOp op = ProblemOp(p.op);
  int nt = p.n_tensors <= trace::kProblemMaxTensors ? p.n_tensors : trace::kProblemMaxTensors;
  const ProblemTensor* t = p.tensors;
  o.text(problem_op_text(op));
  for (int i = 0; i < nt; ++i) {
    o.text(TensorRole(t[i].role) == TensorRole::kO ? " -> " : " ");
    plain_tensor(o, t[i]);
  }
  if (param(p, 0)) o.text(" causal");
  if (int64_t ppm = param(p, 1); ppm > 0 && ppm <= 1000000) {
    o.text(" dropout=");
    o.num(ppm / 1000000);
    if (int64_t frac = ppm % 1000000; frac != 0) {
      o.ch('.');
      char digits[7];
      for (int i = 5; i >= 0; --i, frac /= 10) digits[i] = char('0' + frac % 10);
      int last = 5;
      while (last > 0 && digits[last] == '0') --last;
      for (int i = 0; i <= last; ++i) o.ch(digits[i]);
    }
  }
  if (param(p, 2)) o.text(" bias");
  if (param(p, 3)) o.text(" stats");
  if (param(p, 4)) o.text(" paged");
  if (param(p, 5)) o.text(" block_mask");
  if (param(p, 6)) o.text(" ragged");
  if (p.n_fused > 0) {  // at most kProblemMaxFused are recorded: "+12+" when there may be more
    o.text(" (+");
    o.num(p.n_fused);
    o.text(p.n_fused >= trace::kProblemMaxFused ? "+ ops)" : " ops)");
  }
}

// cuBLASLt's compute types (cublasComputeType_t) and epilogues (cublasLtEpilogue_t), by value.
static const char* blas_compute_text(int64_t c) {
  switch (c) {
    case 64: return "f16";
    case 65: return "f16_pedantic";
    case 68: return "f32";
    case 69: return "f32_pedantic";
    case 70: return "f64";
    case 71: return "f64_pedantic";
    case 72: return "i32";
    case 73: return "i32_pedantic";
    case 74: return "f32_fast_f16";
    case 75: return "f32_fast_bf16";
    case 77: return "f32_fast_tf32";
    case 78: return "f32_emulated_bf16x9";
    case 79: return "f64_emulated_fixedpoint";
    default: return nullptr;
  }
}

static const char* blas_epilogue_text(int64_t e) {
  switch (e) {
    case 1: return "";
    case 2: return " +relu";
    case 130: return " +relu_aux";
    case 4: return " +bias";
    case 6: return " +relu_bias";
    case 134: return " +relu_aux_bias";
    case 136: return " +drelu";
    case 152: return " +drelu_bgrad";
    case 32: return " +gelu";
    case 160: return " +gelu_aux";
    case 36: return " +gelu_bias";
    case 164: return " +gelu_aux_bias";
    case 192: return " +dgelu";
    case 208: return " +dgelu_bgrad";
    case 256: return " +bgrada";
    case 512: return " +bgradb";
    default: return nullptr;
  }
}

// A cuBLASLt matmul: D[m,n] = op(A)[m,k] op(B)[k,n] (+ C), as BLAS states it (column-major), with
// the batch, the transposes, types, the compute type and the epilogue; a leading dimension or
// batch stride only where it is not the packed one, a row-major layout named.
static void blaslt(Out& o, const ProblemDesc& p) {
  const ProblemTensor* t = p.tensors;
  bool ta = param(p, 0) != 0, tb = param(p, 1) != 0;
  int64_t m = ta ? t[0].dims[2] : t[0].dims[1];
  int64_t k = ta ? t[0].dims[1] : t[0].dims[2];
  int64_t n = tb ? t[1].dims[1] : t[1].dims[2];
  o.text("blaslt_matmul m");
  o.num(m);
  o.text(" n");
  o.num(n);
  o.text(" k");
  o.num(k);
  if (t[3].dims[0] > 1) {
    o.text(" batch");
    o.num(t[3].dims[0]);
  }
  static const char* const kNames[4] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    const ProblemTensor& x = t[i];
    bool row = x.strides[2] == 1 && x.strides[1] != 1;
    int64_t ld = row ? x.strides[1] : x.strides[2];
    int64_t packed_ld = row ? x.dims[2] : x.dims[1];
    o.text(i == 3 ? " -> " : " ");
    o.text(kNames[i]);
    o.ch(':');
    o.text(dtype_text(x.dtype));
    if ((i == 0 && ta) || (i == 1 && tb)) o.text("^T");
    if (row) o.text(",row");
    if (ld != packed_ld) {
      o.text(",ld");
      o.num(ld);
    }
    if (x.dims[0] > 1 && x.strides[0] != x.dims[1] * x.dims[2]) {
      o.text(",bstride");
      o.num(x.strides[0]);
    }
  }
  o.text(" acc:");
  if (const char* c = blas_compute_text(param(p, 2))) {
    o.text(c);
  } else {
    o.num(param(p, 2));
  }
  if (const char* e = blas_epilogue_text(param(p, 4))) {
    o.text(e);
  } else {
    o.text(" +epilogue:");
    o.num(param(p, 4));
  }
  if (param(p, 5)) o.text(" fast_accum");
}

bool conv_dummy_height(const ProblemDesc& p) {
  if (!is_conv(ProblemOp(p.op)) || !(p.flags & trace::kProblemHasConv) || p.n_tensors != 3) return false;
  const ProblemConv& c = p.conv;
  if (c.spatial != 2 || c.pre[0] != 0 || c.post[0] != 0 || c.stride[0] != 1 || c.dilation[0] != 1) return false;
  for (int i = 0; i < 3; ++i) {
    if (p.tensors[i].nbdims != 4 || p.tensors[i].dims[2] != 1) return false;
  }
  return true;
}

// A normalization named by its mode (cudnnBackendNormMode_t): "layernorm_fwd", "rmsnorm_bwd"; the
// operation's own name when the mode is unknown.
const char* norm_text(ProblemOp op, int64_t mode) {
  bool fwd = op == ProblemOp::kNormFwd;
  switch (mode) {
    case 0: return fwd ? "layernorm_fwd" : "layernorm_bwd";
    case 1: return fwd ? "instancenorm_fwd" : "instancenorm_bwd";
    case 2: return fwd ? "batchnorm_fwd" : "batchnorm_bwd";
    case 3: return fwd ? "groupnorm_fwd" : "groupnorm_bwd";
    case 4: return fwd ? "rmsnorm_fwd" : "rmsnorm_bwd";
    case 5: return fwd ? "adalayernorm_fwd" : "adalayernorm_bwd";
    default: return problem_op_text(op);
  }
}

size_t render_problem(const ProblemDesc& p, char* buf, size_t cap) {
  Out o(buf, cap);
  ProblemOp op = ProblemOp(p.op);
  int nt = p.n_tensors <= trace::kProblemMaxTensors ? p.n_tensors : trace::kProblemMaxTensors;
  const ProblemTensor* t = p.tensors;
  if (is_conv(op) && (p.flags & trace::kProblemHasConv) && nt == 3) {
    // x w -> y, dy w -> dx, x dy -> dw; a 1-D convolution without the height PyTorch adds.
    int skip = conv_dummy_height(p) ? 2 : -1;
    o.text(problem_op_text(op));
    o.ch(' ');
    tensor(o, t[0], skip);
    o.ch(' ');
    tensor(o, t[1], skip);
    o.ch(' ');
    conv_params(o, p.conv, skip == 2 ? 1 : 0);
    o.text(" -> ");
    tensor(o, t[2], skip);
    if (p.flags & trace::kProblemBiasAct) o.text(" +bias +act");
  } else if (op == ProblemOp::kBnFwdTrain || op == ProblemOp::kBnBwd || op == ProblemOp::kBnFwdInfer) {
    o.text(problem_op_text(op));
    if (nt > 0) {
      o.ch(' ');
      tensor(o, t[0]);
    }
    o.text(" mode:");
    o.text(bn_mode_text(param(p, 0)));
    if (const char* name = bn_ops_text(param(p, 1))) {
      o.text(" ops:");
      o.text(name);
    }
  } else if (op == ProblemOp::kPoolFwd || op == ProblemOp::kPoolBwd) {
    int n = clamp3(param(p, 1));
    int64_t window[3], pad[3], stride[3];
    for (int i = 0; i < n; ++i) {
      window[i] = param(p, 2 + i);
      pad[i] = param(p, 5 + i);
      stride[i] = param(p, 8 + i);
    }
    o.text(problem_op_text(op));
    o.ch(' ');
    o.text(pool_mode_text(param(p, 0)));
    if (nt > 0) {
      o.ch(' ');
      tensor(o, t[0]);
    }
    o.text(" win");
    o.list(window, n);
    o.text(" pad");
    o.list(pad, n);
    o.text(" str");
    o.list(stride, n);
    if (nt > 1) {
      o.text(" -> ");
      tensor(o, t[1]);
    }
  } else if (op >= ProblemOp::kRnn && op <= ProblemOp::kRnnBwdWeights) {
    o.text(problem_op_text(op));
    o.ch(' ');
    o.text(rnn_cell_text(param(p, 0)));
    o.text(" in");
    o.num(param(p, 1));
    o.text(" hid");
    o.num(param(p, 2));
    if (param(p, 3) != param(p, 2) && param(p, 3) > 0) {
      o.text(" proj");
      o.num(param(p, 3));
    }
    o.text(" layers");
    o.num(param(p, 4));
    o.text(param(p, 5) == CUDNN_BIDIRECTIONAL ? " bidir " : " unidir ");
    o.text(dtype_text(int(param(p, 6))));
    o.text(" x[seq");
    o.num(param(p, 7));
    o.text(",batch");
    o.num(param(p, 8));
    o.text(",vec");
    o.num(param(p, 9));
    o.ch(']');
    int64_t mode = param(p, 10);
    if (mode >= 0) o.text(mode == CUDNN_FWD_MODE_TRAINING ? " training" : " inference");
  } else if (op == ProblemOp::kCtcLoss) {
    o.text("ctc_loss");
    if (nt > 0) {
      o.ch(' ');
      tensor(o, t[0]);
    }
    o.text(param(p, 0) == CUDNN_CTC_LOSS_ALGO_DETERMINISTIC ? " algo:deterministic" : " algo:nondeterministic");
  } else if (op >= ProblemOp::kStSamplerFwd && op <= ProblemOp::kStGridBwd) {
    int64_t n = param(p, 0);
    n = n < 0 ? 0 : (n > 5 ? 5 : n);
    int64_t dims[5];
    for (int i = 0; i < n; ++i) dims[i] = param(p, 1 + i);
    o.text(problem_op_text(op));
    o.text(" dims");
    o.list(dims, int(n));
    o.ch(' ');
    o.text(dtype_text(int(param(p, 6))));
    for (int i = 0; i < nt; ++i) {
      o.text(TensorRole(t[i].role) == TensorRole::kX ? " " : " -> ");
      tensor(o, t[i]);
    }
    o.text(param(p, 7) == CUDNN_SAMPLER_BILINEAR ? " bilinear" : " sampler?");
  } else if ((op == ProblemOp::kSdpaFwd || op == ProblemOp::kSdpaBwd) && p.n_params >= 5) {
    attention(o, p);
    return o.finish();
  } else if (op == ProblemOp::kBlasLtMatmul && nt == 4 && p.n_params >= 6 && t[0].nbdims == 3 && t[1].nbdims == 3 &&
             t[2].nbdims == 3 && t[3].nbdims == 3) {
    blaslt(o, p);
    return o.finish();
  } else {
    // A backend graph whose main operation is not a convolution: its tensors a b c -> out (a
    // matmul's in plain dimensions, the others', often images, in the layouts' names).
    bool plain = op == ProblemOp::kMatmul || op == ProblemOp::kSdpaFwd || op == ProblemOp::kSdpaBwd;
    bool norm = (op == ProblemOp::kNormFwd || op == ProblemOp::kNormBwd) && p.n_params >= 2;
    o.text(norm ? norm_text(op, param(p, 0)) : problem_op_text(op));
    for (int i = 0; i < nt; ++i) {
      auto role = TensorRole(t[i].role);
      bool out = role == TensorRole::kOut || role == TensorRole::kO || (norm && (role == TensorRole::kY || role == TensorRole::kDx));
      o.text(out ? " -> " : " ");
      if (plain) {
        plain_tensor(o, t[i]);
      } else {
        tensor(o, t[i]);
      }
    }
    if (norm && param(p, 1) >= 0) o.text(param(p, 1) == 1 ? " training" : " inference");
  }
  int nf = p.n_fused <= trace::kProblemMaxFused ? p.n_fused : trace::kProblemMaxFused;
  for (int i = 0; i < nf; ++i) {
    o.text(" +");
    o.text(problem_op_text(ProblemOp(p.fused[i].op)));
    if (ProblemOp(p.fused[i].op) == ProblemOp::kReduce && p.fused[i].mode >= 0) {
      o.ch(':');
      o.text(reduce_text(p.fused[i].mode));
    } else if (ProblemOp(p.fused[i].op) == ProblemOp::kPointwise) {
      o.ch(':');
      if (const char* name = pointwise_text(p.fused[i].mode)) {
        o.text(name);
      } else {
        o.num(p.fused[i].mode);
      }
    }
  }
  return o.finish();
}

const char* knob_text(int type) {
  static const char* const kNames[] = {
      "split_k", "swizzle", "tile_size", "use_tex",
      "edge", "kblock", "ldga", "ldgb",
      "chunk_k", "split_h", "wino_tile", "multiply",
      "split_k_buf", "tilek", "stages", "reduction_mode",
      "cta_split_k_mode", "split_k_slc", "idx_mode", "sliced",
      "split_rs", "singlebuffer", "ldgc", "specfilt",
      "kernel_cfg", "workspace", "tile_cga", "tile_cga_m",
      "tile_cga_n", "block_size", "occupancy", "array_size_per_thread",
      "num_c_per_block", "split_cols", "tile_rows", "tile_cols",
      "load_size", "cta_count", "stream_k", "split_p_slc",
      "tile_m", "tile_n", "warp_spec_cfg", "swap_ab",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == CUDNN_KNOB_TYPE_COUNTS);
  // A cuBLASLt algorithm's configuration: cublasLtMatmulAlgoConfigAttributes_t 1..8 by the
  // attributes' own names (CUBLASLT_ALGO_CONFIG_TILE_ID ...), distinct from cuDNN's knobs.
  static const char* const kBlasNames[] = {
      "tile_id",        "splitk_num",    "reduction_scheme", "cta_swizzling",
      "custom_option", "stages_id", "inner_shape_id",   "cluster_shape_id",
  };
  int blas = type - trace::kBlasKnobBase - 1;
  if (blas >= 0 && blas < int(sizeof(kBlasNames) / sizeof(kBlasNames[0]))) return kBlasNames[blas];
  return type >= 0 && type < CUDNN_KNOB_TYPE_COUNTS ? kNames[type] : nullptr;
}

size_t render_knobs(const trace::Knob* knobs, int n, char* buf, size_t cap) {
  Out o(buf, cap);
  for (int i = 0; i < n; ++i) {
    if (i) o.ch(',');
    if (const char* name = knob_text(knobs[i].type)) {
      o.text(name);
    } else {
      o.ch('k');
      o.num(knobs[i].type);
    }
    o.ch('=');
    o.num(knobs[i].value);
  }
  return o.finish();
}

}  // namespace cuprobe
