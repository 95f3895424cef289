// Typed problems from mirrored descriptors; see cudnn_problem.h.
#include "cudnn_problem.h"

#include <cudnn.h>

namespace cuprobe::shim {

namespace {

using trace::Layout;
using trace::ProblemOp;
using trace::TensorRole;

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

Layout layout_of(const TensorState& t) {
  if (t.nbdims < 3 || t.nbdims > 5) return Layout::kStrided;
  static const int kFirst[5] = {0, 1, 2, 3, 4};
  static const int kLast3[3] = {0, 2, 1};
  static const int kLast4[4] = {0, 2, 3, 1};
  static const int kLast5[5] = {0, 2, 3, 4, 1};
  bool no_strides = true;
  for (int i = 0; i < t.nbdims; ++i) no_strides = no_strides && t.strides[i] == 0;
  if (no_strides) {  // legacy filter: the format says it
    if (t.format == CUDNN_TENSOR_NHWC) return Layout::kChannelsLast;
    if (t.format == CUDNN_TENSOR_NCHW_VECT_C) return Layout::kVectC;
    return Layout::kChannelsFirst;
  }
  int64_t expected[kMaxDims];
  packed_strides(t, kFirst, expected);
  if (strides_match(t, expected)) return Layout::kChannelsFirst;
  const int* last = t.nbdims == 3 ? kLast3 : t.nbdims == 4 ? kLast4 : kLast5;
  packed_strides(t, last, expected);
  if (strides_match(t, expected)) return Layout::kChannelsLast;
  return Layout::kStrided;
}

ProblemOp op_of(int kind) {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return ProblemOp::kConvFwd;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return ProblemOp::kConvDgrad;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return ProblemOp::kConvWgrad;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return ProblemOp::kPointwise;
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR: return ProblemOp::kGenStats;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return ProblemOp::kMatmul;
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR: return ProblemOp::kBnFinalize;
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return ProblemOp::kReduce;
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR: return ProblemOp::kBnBwdWeights;
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR: return ProblemOp::kResampleFwd;
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR: return ProblemOp::kResampleBwd;
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR: return ProblemOp::kConcat;
    case CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR: return ProblemOp::kSignal;
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: return ProblemOp::kNormFwd;
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR: return ProblemOp::kNormBwd;
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return ProblemOp::kReshape;
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: return ProblemOp::kRng;
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return ProblemOp::kSdpaFwd;
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR: return ProblemOp::kSdpaBwd;
    default: return ProblemOp::kOtherOp;
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

void problem_tensor(trace::ProblemTensor& out, TensorRole role, const TensorState& t) {
  int n = t.nbdims <= trace::kProblemMaxDims ? t.nbdims : trace::kProblemMaxDims;
  out.role = uint8_t(role);
  out.dtype = t.dtype;
  out.nbdims = uint8_t(n);
  Layout layout = layout_of(t);
  out.layout = uint8_t(layout);
  for (int i = 0; i < n; ++i) {
    out.dims[i] = t.dims[i];
    out.strides[i] = layout == Layout::kStrided ? t.strides[i] : 0;
  }
}

void conv_problem(trace::ProblemDesc& d, ProblemOp op, const TensorState& in0, const TensorState& in1,
                  const ConvState& conv, const TensorState& out) {
  static const TensorRole kRoles[3][3] = {{TensorRole::kX, TensorRole::kW, TensorRole::kY},
                                          {TensorRole::kDy, TensorRole::kW, TensorRole::kDx},
                                          {TensorRole::kX, TensorRole::kDy, TensorRole::kDw}};
  int k = op == ProblemOp::kConvFwd ? 0 : op == ProblemOp::kConvDgrad ? 1 : 2;
  d.op = uint16_t(op);
  d.flags |= trace::kProblemHasConv;
  d.n_tensors = 3;
  problem_tensor(d.tensors[0], kRoles[k][0], in0);
  problem_tensor(d.tensors[1], kRoles[k][1], in1);
  problem_tensor(d.tensors[2], kRoles[k][2], out);
  // Input channels of the activation over input channels per group of the filter; the legacy
  // API states the group count, the backend API implies it.
  const TensorState& act = op == ProblemOp::kConvDgrad ? out : in0;
  const TensorState& filt = op == ProblemOp::kConvWgrad ? out : in1;
  int groups = conv.groups;
  if (groups <= 0 && act.nbdims > 1 && filt.nbdims > 1 && filt.dims[1] > 0 && act.dims[1] % filt.dims[1] == 0) {
    groups = int(act.dims[1] / filt.dims[1]);
  }
  trace::ProblemConv& c = d.conv;
  int n = conv.spatial > 0 && conv.spatial <= 3 ? conv.spatial : 2;
  c.mode = conv.mode;
  c.compute = conv.compute;
  c.spatial = uint8_t(n);
  c.groups = groups > 0 ? groups : 1;
  for (int i = 0; i < n; ++i) {
    c.pre[i] = conv.pre[i];
    c.post[i] = conv.post[i];
    c.stride[i] = conv.stride[i];
    c.dilation[i] = conv.dilation[i];
  }
  d.math_type = conv.math;
}

bool graph_problem(trace::ProblemDesc& d, const GraphState& g, int64_t* min_alignment) {
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
    conv_problem(d, op_of(main_op->kind), *t0, *t1, conv->u.conv, *tout);
    d.math_type = -1;  // the backend API has no math type
  } else {
    d.op = uint16_t(op_of(main_op->kind));
    d.math_type = -1;
    static const TensorRole kRoles[3] = {TensorRole::kA, TensorRole::kB, TensorRole::kC};
    for (int k = 0; k < 3; ++k) {
      if (const TensorState* t = tensor_of(m.tensors[k])) problem_tensor(d.tensors[d.n_tensors++], kRoles[k], *t);
    }
    if (tout != nullptr) problem_tensor(d.tensors[d.n_tensors++], TensorRole::kOut, *tout);
  }
  for (int i = 0; i < n; ++i) {
    if (ops[i] == main_op) continue;
    if (d.n_fused >= trace::kProblemMaxFused) break;
    trace::FusedOp& f = d.fused[d.n_fused++];
    f.op = uint16_t(op_of(ops[i]->kind));
    f.mode = ops[i]->kind == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR ? op_mode(*ops[i]) : -1;
  }
  return true;
}

}  // namespace cuprobe::shim
