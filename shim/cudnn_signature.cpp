// Problem signatures; see cudnn_signature.h.
#include "cudnn_signature.h"

#include <cudnn.h>
#include <stdio.h>

namespace cuprobe::shim {

namespace {

// Strides of a packed tensor whose dimensions are laid out in `order` (outermost first).
void packed_strides(const TensorState& t, const int* order, int64_t* out) {
  int64_t s = 1;
  for (int i = t.nbdims - 1; i >= 0; --i) {
    out[order[i]] = s;
    s *= t.dims[order[i]];
  }
}

bool strides_match(const TensorState& t, const int64_t* expected) {
  for (int i = 0; i < t.nbdims; ++i) {
    if (t.dims[i] != 1 && t.strides[i] != expected[i]) return false;
  }
  return true;
}

// Names the layout when it is a packed channels-first or channels-last one.
const char* layout_name(const TensorState& t) {
  if (t.nbdims < 3 || t.nbdims > 5) return nullptr;
  static const int kFirst[5] = {0, 1, 2, 3, 4};
  static const int kLast3[3] = {0, 2, 1};
  static const int kLast4[4] = {0, 2, 3, 1};
  static const int kLast5[5] = {0, 2, 3, 4, 1};
  static const char* const kFirstNames[6] = {nullptr, nullptr, nullptr, "ncw", "nchw", "ncdhw"};
  static const char* const kLastNames[6] = {nullptr, nullptr, nullptr, "nwc", "nhwc", "ndhwc"};
  bool no_strides = true;
  for (int i = 0; i < t.nbdims; ++i) no_strides = no_strides && t.strides[i] == 0;
  if (no_strides) {  // legacy filter: the format says it
    if (t.format == CUDNN_TENSOR_NHWC) return kLastNames[t.nbdims];
    if (t.format == CUDNN_TENSOR_NCHW_VECT_C) return "nchw_vect_c";
    return kFirstNames[t.nbdims];
  }
  int64_t expected[kMaxDims];
  packed_strides(t, kFirst, expected);
  if (strides_match(t, expected)) return kFirstNames[t.nbdims];
  const int* last = t.nbdims == 3 ? kLast3 : t.nbdims == 4 ? kLast4 : kLast5;
  packed_strides(t, last, expected);
  if (strides_match(t, expected)) return kLastNames[t.nbdims];
  return nullptr;
}

const char* op_name(int type) {
  switch (type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return "conv_fwd";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return "conv_dgrad";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return "conv_wgrad";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "pw";
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR: return "genstats";
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return "matmul";
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR: return "bn_finalize";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return "reduce";
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR: return "bn_bwd_weights";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR: return "resample_fwd";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR: return "resample_bwd";
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR: return "concat";
    case CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR: return "signal";
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: return "norm_fwd";
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR: return "norm_bwd";
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return "reshape";
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: return "rng";
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return "sdpa_fwd";
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR: return "sdpa_bwd";
    default: return "op";
  }
}

const char* pointwise_name(int mode) {
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
    default: return nullptr;
  }
}

bool is_conv_op(int type) {
  return type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

const TensorState* tensor_of(void* desc) {
  DescEntry* e = desc_find(desc);
  return e && e->kind == CUDNN_BACKEND_TENSOR_DESCRIPTOR ? &e->u.tensor : nullptr;
}

// The operation's own mode where it lives in a separate descriptor (pointwise, reduction).
int op_mode(const DescEntry& op) {
  if (op.u.op.conv == nullptr) return op.u.op.mode;
  DescEntry* aux = desc_find(op.u.op.conv);
  return aux ? aux->u.op.mode : -1;
}

void note_alignment(const TensorState* t, int64_t* min_alignment) {
  if (t && !t->is_virtual && t->alignment > 0 && (*min_alignment == 0 || t->alignment < *min_alignment)) {
    *min_alignment = t->alignment;
  }
}

}  // namespace

void SigBuilder::ch(char c) {
  hash_ = (hash_ ^ uint8_t(c)) * 1099511628211ull;
  if (len_ < kMaxSignature) buf_[len_++] = c;
}

void SigBuilder::text(const char* s) {
  for (; s && *s; ++s) ch(*s);
}

void SigBuilder::num(int64_t v) {
  char tmp[24];
  snprintf(tmp, sizeof tmp, "%lld", static_cast<long long>(v));
  text(tmp);
}

void SigBuilder::list(const int64_t* v, int n) {
  ch('[');
  for (int i = 0; i < n; ++i) {
    if (i) ch(',');
    num(v[i]);
  }
  ch(']');
}

void SigBuilder::list(const int32_t* v, int n) {
  int64_t wide[kMaxDims];
  for (int i = 0; i < n && i < kMaxDims; ++i) wide[i] = v[i];
  list(wide, n < kMaxDims ? n : kMaxDims);
}

const char* SigBuilder::str() {
  buf_[len_] = 0;
  return buf_;
}

const char* dtype_name(int dtype) {
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
    default: return "t?";
  }
}

void SigBuilder::tensor(const char* role, const TensorState& t) {
  text(role);
  list(t.dims, t.nbdims);
  text(dtype_name(t.dtype));
  ch(' ');
  if (const char* layout = layout_name(t)) {
    text(layout);
  } else {
    text("str");
    list(t.strides, t.nbdims);
  }
}

void SigBuilder::conv_params(const ConvState& c, int groups) {
  int n = c.spatial > 0 && c.spatial <= 3 ? c.spatial : 2;
  bool symmetric = true;
  for (int i = 0; i < n; ++i) symmetric = symmetric && c.pre[i] == c.post[i];
  text("pad");
  list(c.pre, n);
  if (!symmetric) {
    ch(':');
    list(c.post, n);
  }
  text(" str");
  list(c.stride, n);
  text(" dil");
  list(c.dilation, n);
  text(" g");
  num(groups > 0 ? groups : 1);
  text(" acc:");
  text(dtype_name(c.compute));
  if (c.mode == CUDNN_CONVOLUTION) text(" flip");
}

void conv_signature(SigBuilder& b, const char* kind, const char* in0_role, const TensorState& in0,
                    const char* in1_role, const TensorState& in1, const ConvState& conv, const char* out_role,
                    const TensorState& out) {
  // Input channels of the activation over input channels per group of the filter; the legacy
  // API states the group count, the backend API implies it.
  char direction = kind[5];  // conv_(f)wd, conv_(d)grad, conv_(w)grad
  const TensorState& act = direction == 'd' ? out : in0;
  const TensorState& filt = direction == 'w' ? out : in1;
  int groups = conv.groups;
  if (groups <= 0 && act.nbdims > 1 && filt.nbdims > 1 && filt.dims[1] > 0 && act.dims[1] % filt.dims[1] == 0) {
    groups = int(act.dims[1] / filt.dims[1]);
  }
  b.text(kind);
  b.ch(' ');
  b.tensor(in0_role, in0);
  b.ch(' ');
  b.tensor(in1_role, in1);
  b.ch(' ');
  b.conv_params(conv, groups);
  b.text(" -> ");
  b.tensor(out_role, out);
}

bool graph_signature(SigBuilder& b, const GraphState& g, int64_t* min_alignment) {
  *min_alignment = 0;
  const DescEntry* main_op = nullptr;
  const DescEntry* ops[kMaxGraphOps];
  int n = 0;
  for (int i = 0; i < g.n_ops && i < kMaxGraphOps; ++i) {
    DescEntry* e = desc_find(g.ops[i]);
    if (e == nullptr) return false;
    ops[n++] = e;
    if (main_op == nullptr && is_conv_op(e->kind)) main_op = e;
  }
  if (n == 0) return false;
  for (int i = 0; main_op == nullptr && i < n; ++i) {
    if (ops[i]->kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) main_op = ops[i];
  }
  if (main_op == nullptr) main_op = ops[0];
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) note_alignment(tensor_of(ops[i]->u.op.tensors[k]), min_alignment);
  }
  const OpState& m = main_op->u.op;
  const TensorState* t0 = tensor_of(m.tensors[0]);
  const TensorState* t1 = tensor_of(m.tensors[1]);
  const TensorState* tout = tensor_of(m.tensors[kOpOutput]);
  if (is_conv_op(main_op->kind)) {
    DescEntry* conv = desc_find(m.conv);
    if (!t0 || !t1 || !tout || !conv) return false;
    switch (main_op->kind) {
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
        conv_signature(b, "conv_fwd", "x", *t0, "w", *t1, conv->u.conv, "y", *tout);
        break;
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
        conv_signature(b, "conv_dgrad", "dy", *t0, "w", *t1, conv->u.conv, "dx", *tout);
        break;
      default:
        conv_signature(b, "conv_wgrad", "x", *t0, "dy", *t1, conv->u.conv, "dw", *tout);
        break;
    }
  } else {
    b.text(op_name(main_op->kind));
    static const char* const kRoles[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; ++k) {
      if (const TensorState* t = tensor_of(m.tensors[k])) {
        b.ch(' ');
        b.tensor(kRoles[k], *t);
      }
    }
    if (tout != nullptr) {
      b.text(" -> ");
      b.tensor("out", *tout);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (ops[i] == main_op) continue;
    b.text(" +");
    b.text(op_name(ops[i]->kind));
    if (ops[i]->kind == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
      int mode = op_mode(*ops[i]);
      b.ch(':');
      if (const char* name = pointwise_name(mode)) {
        b.text(name);
      } else {
        b.num(mode);
      }
    }
  }
  return true;
}

}  // namespace cuprobe::shim
