// Typed cuDNN problems, plan knob sets and legacy algorithm results, as the shim writes them into
// a trace (records kProblem, kKnobs, kAlgoResults of trace_format.h) and readers decode them.
//
// A problem is what cuDNN is asked to solve, independent of the data pointers: the operation,
// each tensor's dimensions, strides, data type and layout, convolution parameters, fused
// operations of a graph, and a few operation-specific parameters. The same problem has the same
// ProblemDesc (and hash) in every process, rank and host, whether it came through the backend
// (graph) API or the legacy API. Its readable text is rendered from it in one place
// (common/problem_text.h); nothing parses that text back.
//
// Plain data, no library calls: usable from the shim's hot path. Enumerated values that come from
// cuDNN (data types, convolution and pooling modes, pointwise modes, ...) are cuDNN's own numbers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuprobe/trace_format.h"

namespace cuprobe::trace {

inline constexpr int kProblemMaxDims = 8;
inline constexpr int kProblemMaxTensors = 4;
inline constexpr int kProblemMaxFused = 12;
inline constexpr int kProblemMaxParams = 16;

// The operation. Values 1..31 are backend operation kinds (the main operation of a graph, and
// fused operations); 32 and up are legacy API problems.
enum class ProblemOp : uint16_t {
  kUnknown = 0,
  kConvFwd = 1,
  kConvDgrad = 2,
  kConvWgrad = 3,
  kPointwise = 4,
  kGenStats = 5,
  kMatmul = 6,
  kBnFinalize = 7,
  kReduce = 8,
  kBnBwdWeights = 9,
  kResampleFwd = 10,
  kResampleBwd = 11,
  kConcat = 12,
  kSignal = 13,
  kNormFwd = 14,
  kNormBwd = 15,
  kReshape = 16,
  kRng = 17,
  kSdpaFwd = 18,
  kSdpaBwd = 19,
  kOtherOp = 20,  // a backend operation kind without a name here
  kPagedCacheLoad = 21,  // attention's paged K/V cache gather
  kBlockScaleQuantize = 22,
  kBlockScaleDequantize = 23,
  kExpandBandMatrix = 24,
  kContractBandMatrix = 25,
  kMoeGroupedMatmul = 26,
  kBnFwdTrain = 32,
  kBnBwd = 33,
  kBnFwdInfer = 34,
  kRnn = 35,  // workspace queries of an RNN
  kRnnFwd = 36,
  kRnnBwdData = 37,
  kRnnBwdWeights = 38,
  kPoolFwd = 39,
  kPoolBwd = 40,
  kCtcLoss = 41,
  kStSamplerFwd = 42,
  kStSamplerBwd = 43,
  kStGridFwd = 44,
  kStGridBwd = 45,
  kBlasLtMatmul = 46,  // a cuBLASLt matmul (D = alpha op(A) op(B) + beta C, epilogue)
  kProblemOpLimit = 47,
};

// kQ..kDo: attention's query, key, value, output and output gradient (sdpa_fwd, sdpa_bwd).
enum class TensorRole : uint8_t { kNone = 0, kX, kW, kY, kDy, kDx, kDw, kA, kB, kC, kOut, kProbs, kQ, kK, kV, kO, kDo, kScale, kBias, kRoleLimit };

// How a tensor's elements are laid out: a packed channels-first or channels-last order (named by
// the number of dimensions: ncw/nchw/ncdhw, nwc/nhwc/ndhwc), a vectorized-channel filter, or
// anything else, which only the strides say.
enum class Layout : uint8_t { kStrided = 0, kChannelsFirst = 1, kChannelsLast = 2, kVectC = 3 };

struct ProblemTensor {
  uint8_t role;    // TensorRole
  int8_t dtype;    // cudnnDataType_t
  uint8_t nbdims;  // <= kProblemMaxDims
  uint8_t layout;  // Layout
  uint32_t pad;
  int64_t dims[kProblemMaxDims];
  int64_t strides[kProblemMaxDims];  // meaningful (and part of the identity) for kStrided only
};
static_assert(sizeof(ProblemTensor) == 136);

struct ProblemConv {
  int8_t mode;      // cudnnConvolutionMode_t
  int8_t compute;   // cudnnDataType_t of accumulation
  uint8_t spatial;  // 1..3
  uint8_t pad;
  int32_t groups;   // >= 1: stated by the legacy API, implied by the tensors for the backend API
  int32_t pre[3], post[3], stride[3], dilation[3];
};
static_assert(sizeof(ProblemConv) == 56);

struct FusedOp {
  uint16_t op;  // ProblemOp
  uint16_t pad;
  int32_t mode;  // kPointwise: cudnnPointwiseMode_t; otherwise -1
};

enum ProblemFlags : uint8_t {
  kProblemHasConv = 1u << 0,  // conv is meaningful
  kProblemBiasAct = 1u << 1,  // legacy cudnnConvolutionBiasActivationForward: bias and activation fused
};

// Operation-specific parameters (params[i]), by operation:
//   bn_*          0 mode (cudnnBatchNormMode_t), 1 ops (cudnnBatchNormOps_t, -1 none)
//   pool_*        0 mode, 1 spatial dims n, 2..4 window, 5..7 padding, 8..10 stride (n of each)
//   rnn*          0 cell mode, 1 input size, 2 hidden size, 3 projection size, 4 layers,
//                 5 direction, 6 data type, 7 max sequence length, 8 batch, 9 vector size,
//                 10 forward mode (cudnnForwardMode_t, -1 none)
//   ctc_loss      0 algorithm
//   st_*          0 dims n, 1..5 dims, 6 data type, 7 sampler
//   blaslt_matmul 0 op(A) (cublasOperation_t), 1 op(B), 2 compute type (cublasComputeType_t),
//                 3 scale type (cudaDataType_t), 4 epilogue (cublasLtEpilogue_t), 5 fast fp8
//                 accumulation (0/1), 6 bias data type (cudaDataType_t, -1 none); tensors a, b, c,
//                 out (D), each dims [batch, rows, cols] as cuBLASLt's layout states them (column-
//                 major unless the layout's order says otherwise) with strides [batch offset, 1,
//                 ld] (row order: [batch offset, ld, 1]); dtypes translated to cudnnDataType_t
//   sdpa_*        0 causal mask (0/1), 1 dropout probability in millionths (0 none), 2 an additive
//                 bias or mask (0/1), 3 softmax statistics written (training) (0/1), 4 paged K/V
//                 caches (0/1); cuDNN's own SDPA operation also 5 a block mask (0/1), 6 variable
//                 sequence lengths (0/1); attention recognized in a composite graph (matmuls,
//                 softmax) keeps its other operations in `fused`
struct ProblemDesc {
  uint16_t op;         // ProblemOp
  uint8_t n_tensors;   // tensors in the problem's order (inputs, then the output)
  uint8_t n_fused;     // further operations of a graph, in graph order
  uint8_t n_params;
  uint8_t flags;       // ProblemFlags
  int8_t math_type;    // legacy cudnnMathType_t, -1 unknown: recorded beside the problem, not part of it
  uint8_t pad;
  ProblemConv conv;
  FusedOp fused[kProblemMaxFused];
  int64_t params[kProblemMaxParams];
  ProblemTensor tensors[kProblemMaxTensors];
};

// The problem's identity: FNV-1a over every value that is part of it (not math_type, not unused
// slots), so equal problems hash equal whatever the rest of the struct holds.
struct ProblemHasher {
  uint64_t h = 1469598103934665603ull;
  void add(int64_t v) {
    uint64_t u = uint64_t(v);
    for (int i = 0; i < 8; ++i) h = (h ^ ((u >> (8 * i)) & 0xff)) * 1099511628211ull;
  }
};
inline uint64_t problem_hash(const ProblemDesc& d) {
  ProblemHasher x;
  x.add(d.op);
  x.add(d.flags & kProblemBiasAct);
  int nt = d.n_tensors <= kProblemMaxTensors ? d.n_tensors : kProblemMaxTensors;
  int nf = d.n_fused <= kProblemMaxFused ? d.n_fused : kProblemMaxFused;
  int np = d.n_params <= kProblemMaxParams ? d.n_params : kProblemMaxParams;
  x.add(nt);
  for (int i = 0; i < nt; ++i) {
    const ProblemTensor& t = d.tensors[i];
    int nd = t.nbdims <= kProblemMaxDims ? t.nbdims : kProblemMaxDims;
    x.add(t.role);
    x.add(t.dtype);
    x.add(nd);
    x.add(t.layout);
    for (int k = 0; k < nd; ++k) x.add(t.dims[k]);
    if (t.layout == uint8_t(Layout::kStrided)) {
      for (int k = 0; k < nd; ++k) x.add(t.strides[k]);
    }
  }
  if (d.flags & kProblemHasConv) {
    const ProblemConv& c = d.conv;
    int n = c.spatial >= 1 && c.spatial <= 3 ? c.spatial : 2;
    x.add(c.mode);
    x.add(c.compute);
    x.add(n);
    x.add(c.groups);
    for (int k = 0; k < n; ++k) {
      x.add(c.pre[k]);
      x.add(c.post[k]);
      x.add(c.stride[k]);
      x.add(c.dilation[k]);
    }
  }
  x.add(nf);
  for (int i = 0; i < nf; ++i) {
    x.add(d.fused[i].op);
    x.add(d.fused[i].mode);
  }
  x.add(np);
  for (int i = 0; i < np; ++i) x.add(d.params[i]);
  return x.h == 0 ? 1 : x.h;
}

// A distinct problem, written once per process (before the first call that refers to it) and
// referred to by id from call fields of type 'q'. After the head comes the ProblemDesc, packed:
// its first 8 bytes (op, counts, flags, math type); the ProblemConv when kProblemHasConv; n_fused
// FusedOps; n_params int64 parameters; then per tensor 8 bytes (role, dtype, nbdims, layout, pad),
// nbdims int64 dims and, for a kStrided layout only, nbdims int64 strides. Padded to 8 bytes.
struct ProblemRecordHead {
  RecordHeader h;
  uint32_t id;
  uint32_t pad;
  uint64_t hash;  // problem_hash(desc)
};
static_assert(sizeof(ProblemRecordHead) == 24);
inline constexpr uint32_t kProblemDescHead = 8;        // op .. pad of ProblemDesc
inline constexpr uint32_t kProblemTensorHead = 8;      // role .. pad of ProblemTensor
static_assert(offsetof(ProblemDesc, conv) == kProblemDescHead);
static_assert(offsetof(ProblemTensor, dims) == kProblemTensorHead);

// Bytes of a problem's packed description (without the head, unpadded).
inline uint32_t packed_problem_size(const ProblemDesc& d) {
  uint32_t n = kProblemDescHead;
  if (d.flags & kProblemHasConv) n += sizeof(ProblemConv);
  n += uint32_t(d.n_fused <= kProblemMaxFused ? d.n_fused : kProblemMaxFused) * sizeof(FusedOp);
  n += uint32_t(d.n_params <= kProblemMaxParams ? d.n_params : kProblemMaxParams) * 8;
  for (int i = 0; i < d.n_tensors && i < kProblemMaxTensors; ++i) {
    const ProblemTensor& t = d.tensors[i];
    uint32_t nd = t.nbdims <= kProblemMaxDims ? t.nbdims : kProblemMaxDims;
    n += kProblemTensorHead + nd * 8 * (t.layout == uint8_t(Layout::kStrided) ? 2 : 1);
  }
  return n;
}

// Writes the packed description (packed_problem_size bytes) to out.
inline void pack_problem(const ProblemDesc& d, char* out) {
  auto put = [&out](const void* p, uint32_t n) {
    __builtin_memcpy(out, p, n);
    out += n;
  };
  ProblemDesc head = d;  // counts clamped as they are written
  if (head.n_fused > kProblemMaxFused) head.n_fused = kProblemMaxFused;
  if (head.n_params > kProblemMaxParams) head.n_params = kProblemMaxParams;
  if (head.n_tensors > kProblemMaxTensors) head.n_tensors = kProblemMaxTensors;
  put(&head, kProblemDescHead);
  if (d.flags & kProblemHasConv) put(&d.conv, sizeof(ProblemConv));
  put(d.fused, head.n_fused * uint32_t(sizeof(FusedOp)));
  put(d.params, head.n_params * 8u);
  for (int i = 0; i < head.n_tensors; ++i) {
    ProblemTensor t = d.tensors[i];
    if (t.nbdims > kProblemMaxDims) t.nbdims = kProblemMaxDims;
    put(&t, kProblemTensorHead);
    put(t.dims, t.nbdims * 8u);
    if (t.layout == uint8_t(Layout::kStrided)) put(t.strides, t.nbdims * 8u);
  }
}

// Reads a packed description of at most n bytes into *d (value-initialized first); false when
// it does not fit in n bytes or holds impossible counts.
inline bool unpack_problem(const char* in, uint32_t n, ProblemDesc* d) {
  *d = ProblemDesc{};
  uint32_t at = 0;
  auto get = [&](void* p, uint32_t k) {
    if (k > n - at) return false;
    __builtin_memcpy(p, in + at, k);
    at += k;
    return true;
  };
  if (n < kProblemDescHead || !get(d, kProblemDescHead)) return false;
  if (d->n_tensors > kProblemMaxTensors || d->n_fused > kProblemMaxFused || d->n_params > kProblemMaxParams) return false;
  if ((d->flags & kProblemHasConv) && !get(&d->conv, sizeof(ProblemConv))) return false;
  if (!get(d->fused, d->n_fused * uint32_t(sizeof(FusedOp))) || !get(d->params, d->n_params * 8u)) return false;
  for (int i = 0; i < d->n_tensors; ++i) {
    ProblemTensor& t = d->tensors[i];
    if (!get(&t, kProblemTensorHead) || t.nbdims > kProblemMaxDims || !get(t.dims, t.nbdims * 8u)) return false;
    if (t.layout == uint8_t(Layout::kStrided) && !get(t.strides, t.nbdims * 8u)) return false;
    t.pad = 0;
  }
  d->pad = 0;
  return true;
}

// A plan's engine knob choices, sorted by knob type, written once per distinct set and referred to
// by id from call fields of type 'k'. Knob types are cudnnBackendKnobType_t, or for a cuBLASLt
// algorithm kBlasKnobBase + its cublasLtMatmulAlgoConfigAttributes_t (tile, split-K, ...).
struct Knob {
  int32_t type;
  int32_t pad;
  int64_t value;
};
inline constexpr int kMaxKnobsPerSet = 16;
inline constexpr int32_t kBlasKnobBase = 1000;
struct KnobsRecord {
  RecordHeader h;
  uint32_t id;
  uint32_t n;  // <= kMaxKnobsPerSet
  Knob knobs[];
};
static_assert(sizeof(KnobsRecord) == 16);

// The algorithms a legacy cudnnFind*/cudnnGet* call returned, in cuDNN's order, written on the
// calling thread just before the call record, which refers to it by id (field of type 'r').
struct AlgoResult {
  int32_t algo;
  int32_t status;  // cudnnStatus_t of this algorithm
  float time_ms;   // measured (Find*), -1 when not timed
  int32_t determinism;
  int32_t math_type;
  // The result's configuration as a knob set id (kKnobs), 0 none: a cuBLASLt algorithm's tile,
  // stages, split-K... (Knob types kBlasKnobBase + cublasLtMatmulAlgoConfigAttributes_t).
  uint32_t knobs;
  uint64_t memory;  // workspace bytes
};
static_assert(sizeof(AlgoResult) == 32);
inline constexpr int kMaxAlgoResults = 32;
struct AlgoResultsRecord {
  RecordHeader h;
  uint32_t id;
  uint32_t n;  // <= kMaxAlgoResults
  AlgoResult results[];
};
static_assert(sizeof(AlgoResultsRecord) == 16);

// The layer a problem belongs to: its operation, data types, layouts and channel counts (a
// filter's dims whole), the convolution, fused operations and the operation's parameters (an
// RNN's sequence length and batch left out) -- what stays when only the input's batch and spatial
// sizes change. Never 0. The analyzer's shape classes (reader::layer_key) and the shim's search
// budget (a layer asked for a second shape) share it.
inline uint64_t layer_hash(const ProblemDesc& d) {
  ProblemHasher h;
  h.add(d.op);
  h.add(d.flags);
  int nt = d.n_tensors <= kProblemMaxTensors ? d.n_tensors : kProblemMaxTensors;
  for (int i = 0; i < nt; ++i) {
    const ProblemTensor& t = d.tensors[i];
    auto role = TensorRole(t.role);
    h.add(t.role);
    h.add(t.dtype);
    h.add(t.layout);
    h.add(t.nbdims);
    if (role == TensorRole::kW || role == TensorRole::kDw) {
      for (int k = 0; k < t.nbdims && k < kProblemMaxDims; ++k) h.add(t.dims[k]);
    } else if (t.nbdims >= 2) {
      h.add(t.dims[1]);  // batch and spatial sizes change with the input; the channel count is the layer's
    }
  }
  if (d.flags & kProblemHasConv) {
    const ProblemConv& c = d.conv;
    h.add(c.mode);
    h.add(c.compute);
    h.add(c.spatial);
    h.add(c.groups);
    for (int k = 0; k < 3; ++k) {
      h.add(c.pre[k]);
      h.add(c.post[k]);
      h.add(c.stride[k]);
      h.add(c.dilation[k]);
    }
  }
  for (int i = 0; i < d.n_fused && i < kProblemMaxFused; ++i) {
    h.add(d.fused[i].op);
    h.add(d.fused[i].mode);
  }
  bool rnn = d.op >= uint16_t(ProblemOp::kRnn) && d.op <= uint16_t(ProblemOp::kRnnBwdWeights);
  for (int i = 0; i < d.n_params && i < kProblemMaxParams; ++i) {
    if (rnn && (i == 7 || i == 8)) continue;  // sequence length and batch
    h.add(d.params[i]);
  }
  return h.h | 1;
}

}  // namespace cuprobe::trace
