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
    case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR: return ProblemOp::kPagedCacheLoad;
    case CUDNN_BACKEND_OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR: return ProblemOp::kBlockScaleQuantize;
    case CUDNN_BACKEND_OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR: return ProblemOp::kBlockScaleDequantize;
    case CUDNN_BACKEND_OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR: return ProblemOp::kExpandBandMatrix;
    case CUDNN_BACKEND_OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR: return ProblemOp::kContractBandMatrix;
    case CUDNN_BACKEND_OPERATION_MOE_GROUPED_MATMUL_DESCRIPTOR: return ProblemOp::kMoeGroupedMatmul;
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

// The operation's own mode where it lives in a separate descriptor (pointwise, reduction, RNG),
// copied from that descriptor when it was set on the operation (it may be gone by the graph's
// finalize, its address reused); -1 when it was not known then.
int op_mode(const DescEntry& op) { return op.u.op.mode_set ? op.u.op.mode : -1; }

void note_alignment(const TensorState* t, int64_t* min_alignment) {
  if (t && !t->is_virtual && t->alignment > 0 && (*min_alignment == 0 || t->alignment < *min_alignment)) {
    *min_alignment = t->alignment;
  }
}

// ---- Attention ----------------------------------------------------------------------------------
//
// cudnn-frontend builds PyTorch's cuDNN attention (scaled_dot_product_attention) either with
// cuDNN's own SDPA operation or as a composite graph: S = Q·Kᵀ, a scale, masks (a causal mask is a
// pair of GEN_INDEX, a comparison and a BINARY_SELECT; a bias an ADD), the softmax (MAX and ADD
// reductions, SUB, EXP, DIV), dropout (an RNG operation and MULs), then O = P·V; its backward
// recomputes P and has four or more matmuls (dV, dP, dQ, dK). A graph with two or more matmuls,
// a reduction and an EXP is attention: its problem is sdpa_fwd (sdpa_bwd) with q, k, v and o (do)
// in their own roles, K shown untransposed, and what the other operations say as parameters.

bool is_virtual(const TensorState* t) { return t == nullptr || t->is_virtual; }

// K as the graph reads it is Kᵀ (its last two dimensions swapped): shown as K.
TensorState untransposed(const TensorState& t) {
  TensorState k = t;
  if (k.nbdims >= 2) {
    int a = k.nbdims - 2, b = k.nbdims - 1;
    int64_t d = k.dims[a], s = k.strides[a];
    k.dims[a] = k.dims[b];
    k.strides[a] = k.strides[b];
    k.dims[b] = d;
    k.strides[b] = s;
  }
  return k;
}

bool attention_problem(trace::ProblemDesc& d, const DescEntry* const* ops, int n) {
  const DescEntry* matmuls[kMaxGraphOpsAll];
  int nm = 0;
  bool exp = false, reduce = false, gen_index = false, compare = false, select = false, paged = false, stats = false;
  int add_inputs = 0;
  int64_t keep_ppm = -1;
  for (int i = 0; i < n; ++i) {
    const DescEntry& op = *ops[i];
    switch (op.kind) {
      case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: matmuls[nm++] = &op; break;
      case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: reduce = true; break;
      case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: keep_ppm = op_mode(op); break;
      case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR: paged = true; break;
      case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
        int mode = op_mode(op);
        exp = exp || mode == CUDNN_POINTWISE_EXP;
        gen_index = gen_index || mode == CUDNN_POINTWISE_GEN_INDEX;
        compare = compare || (mode >= CUDNN_POINTWISE_CMP_EQ && mode <= CUDNN_POINTWISE_CMP_LE);
        select = select || mode == CUDNN_POINTWISE_BINARY_SELECT;
        // A bias or additive mask: an ADD of a tensor the application gives (not a scalar).
        const TensorState* b = tensor_of(op.u.op.tensors[1]);
        if (mode == CUDNN_POINTWISE_ADD && !is_virtual(b) && !b->by_value && b->nbdims >= 2) ++add_inputs;
        // The softmax statistics (training): a pointwise result the application reads back.
        const TensorState* out = tensor_of(op.u.op.tensors[kOpOutput]);
        if (!is_virtual(out) && (mode == CUDNN_POINTWISE_ADD || mode == CUDNN_POINTWISE_LOG)) stats = true;
        break;
      }
      default: break;
    }
  }
  if (nm < 2 || !exp || !reduce) return false;
  bool bwd = nm >= 4;
  // S = Q·Kᵀ: the first matmul of two application tensors into an intermediate.
  const TensorState *q = nullptr, *kt = nullptr, *v = nullptr, *o = nullptr;
  for (int i = 0; i < nm && q == nullptr; ++i) {
    const OpState& m = matmuls[i]->u.op;
    if (!is_virtual(tensor_of(m.tensors[0])) && !is_virtual(tensor_of(m.tensors[1])) &&
        is_virtual(tensor_of(m.tensors[kOpOutput]))) {
      q = tensor_of(m.tensors[0]);
      kt = tensor_of(m.tensors[1]);
    }
  }
  for (int i = 0; i < nm && v == nullptr; ++i) {
    const OpState& m = matmuls[i]->u.op;
    const TensorState* a = tensor_of(m.tensors[0]);
    const TensorState* b = tensor_of(m.tensors[1]);
    const TensorState* c = tensor_of(m.tensors[kOpOutput]);
    if (!bwd && is_virtual(a) && !is_virtual(b) && !is_virtual(c)) {
      v = b;  // O = P·V
      o = c;
    } else if (bwd && a != q && !is_virtual(a) && !is_virtual(b) && b != kt) {
      o = a;  // dP = dO·Vᵀ
      v = b;
    }
  }
  if (q == nullptr || kt == nullptr || v == nullptr || o == nullptr) return false;
  d.op = uint16_t(bwd ? ProblemOp::kSdpaBwd : ProblemOp::kSdpaFwd);
  d.math_type = -1;
  d.n_tensors = 4;
  problem_tensor(d.tensors[0], TensorRole::kQ, *q);
  problem_tensor(d.tensors[1], TensorRole::kK, untransposed(*kt));
  problem_tensor(d.tensors[2], TensorRole::kV, bwd ? untransposed(*v) : *v);
  problem_tensor(d.tensors[3], bwd ? TensorRole::kDo : TensorRole::kO, *o);
  d.n_params = 5;
  d.params[0] = gen_index && compare && select ? 1 : 0;
  d.params[1] = keep_ppm >= 0 && keep_ppm <= 1000000 ? 1000000 - keep_ppm : 0;
  d.params[2] = add_inputs > 0 ? 1 : 0;
  d.params[3] = stats ? 1 : 0;
  d.params[4] = paged ? 1 : 0;
  return true;
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
  return graph_problem_of_ops(d, g.ops, g.n_ops < kMaxGraphOps ? g.n_ops : kMaxGraphOps, min_alignment);
}

bool graph_problem_of_ops(trace::ProblemDesc& d, void* const* op_descs, int count, int64_t* min_alignment) {
  *min_alignment = 0;
  const DescEntry* main_op = nullptr;
  const DescEntry* ops[kMaxGraphOpsAll];
  int n = 0;
  for (int i = 0; i < count && i < kMaxGraphOpsAll; ++i) {
    DescEntry* e = desc_find(op_descs[i]);
    if (e == nullptr) return false;
    ops[n++] = e;
    if (main_op == nullptr && is_conv_op(e->kind)) main_op = e;
  }
  if (n == 0) return false;
  for (int i = 0; main_op == nullptr && i < n; ++i) {
    if (ops[i]->kind == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR ||
        ops[i]->kind == CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR) {
      main_op = ops[i];
    }
  }
  bool attention = main_op == nullptr && attention_problem(d, ops, n);
  for (int i = 0; main_op == nullptr && i < n; ++i) {
    if (ops[i]->kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) main_op = ops[i];
  }
  // A normalization graph is named by its norm, not by the pointwise operations around it
  // (cudnn-frontend's batchnorm samples begin with a pointwise scale or a ReLU backward).
  for (int i = 0; main_op == nullptr && i < n; ++i) {
    if (ops[i]->kind == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR ||
        ops[i]->kind == CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR) {
      main_op = ops[i];
    }
  }
  if (main_op == nullptr) main_op = ops[0];
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) note_alignment(tensor_of(ops[i]->u.op.tensors[k]), min_alignment);
  }
  const OpState& m = main_op->u.op;
  const TensorState* t0 = tensor_of(m.tensors[0]);
  const TensorState* t1 = tensor_of(m.tensors[1]);
  const TensorState* tout = tensor_of(m.tensors[kOpOutput]);
  if (attention) {
    // Tensors and parameters are set; every operation but the first matmul goes to `fused`.
  } else if (is_conv_op(main_op->kind)) {
    DescEntry* conv = desc_find(m.conv);
    if (!t0 || !t1 || !tout || !conv) return false;
    conv_problem(d, op_of(main_op->kind), *t0, *t1, conv->u.conv, *tout);
    d.math_type = -1;  // the backend API has no math type
  } else {
    d.op = uint16_t(op_of(main_op->kind));
    d.math_type = -1;
    bool sdpa = main_op->kind == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR ||
                main_op->kind == CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR;
    bool norm_fwd = main_op->kind == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR;
    bool norm_bwd = main_op->kind == CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR;
    static const TensorRole kRoles[3] = {TensorRole::kA, TensorRole::kB, TensorRole::kC};
    static const TensorRole kSdpaRoles[3] = {TensorRole::kQ, TensorRole::kK, TensorRole::kV};
    static const TensorRole kNormFwdRoles[3] = {TensorRole::kX, TensorRole::kScale, TensorRole::kBias};
    static const TensorRole kNormBwdRoles[3] = {TensorRole::kX, TensorRole::kDy, TensorRole::kScale};
    const TensorRole* roles = sdpa ? kSdpaRoles : norm_fwd ? kNormFwdRoles : norm_bwd ? kNormBwdRoles : kRoles;
    for (int k = 0; k < 3; ++k) {
      if (const TensorState* t = tensor_of(m.tensors[k])) problem_tensor(d.tensors[d.n_tensors++], roles[k], *t);
    }
    TensorRole out_role = norm_fwd   ? TensorRole::kY
                          : norm_bwd ? TensorRole::kDx
                          : !sdpa    ? TensorRole::kOut
                          : main_op->kind == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR ? TensorRole::kO
                                                                                          : TensorRole::kDo;
    if (tout != nullptr) problem_tensor(d.tensors[d.n_tensors++], out_role, *tout);
    if (norm_fwd || norm_bwd) {  // cudnnBackendNormMode_t and the forward's phase, -1 unknown
      d.n_params = 2;
      d.params[0] = op_mode(*main_op);
      d.params[1] = norm_fwd && m.norm_phase != 0 ? int64_t(m.norm_phase) - 1 : -1;
    }
    if (sdpa) {  // the parameters composite attention has, as far as the operation tells them
      int32_t bits = m.mode;
      d.n_params = 7;
      d.params[3] = (bits & kSdpaStats) != 0;
      d.params[4] = (bits & kSdpaPaged) != 0;
      d.params[5] = (bits & kSdpaBlockMask) != 0;
      d.params[6] = (bits & kSdpaRagged) != 0;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (ops[i] == main_op) continue;
    if (d.n_fused >= trace::kProblemMaxFused) break;
    trace::FusedOp& f = d.fused[d.n_fused++];
    f.op = uint16_t(op_of(ops[i]->kind));
    bool moded = ops[i]->kind == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR ||
                 ops[i]->kind == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR ||
                 ops[i]->kind == CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR;
    f.mode = moded ? op_mode(*ops[i]) : -1;
  }
  return true;
}

}  // namespace cuprobe::shim
