// Builds cuDNN backend graphs that are not convolutions, call for call as cudnn-frontend 1.x
// builds them, on the cuDNN test double (or a real cuDNN: nothing here is double-specific), and
// runs each once: heuristics, the first plan that builds, one execution.
//
//   --sdpa        scaled dot-product attention forward as a composite graph (S = Q·Kᵀ, scale,
//                 softmax with its statistics, O = P·V): 14 operations, more than a graph's
//                 mirror entry keeps; --causal adds the causal mask (GEN_INDEX x2, CMP_GE,
//                 BINARY_SELECT), --dropout P the dropout (an RNG of keep probability 1 - P and
//                 two MULs), --bias an additive bias [b,1,s,s]
//   --sdpa-bwd    its backward's matmuls (dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q) around
//                 the recomputed softmax
//   --matmul      a plain batched matmul C = A·B with a bias ADD and a RELU
//   --native      cuDNN's own SDPA forward operation (Q, K, V, O, statistics, scale)
//   --norm        a layer norm forward (training) and a batch norm backward behind a ReLU backward
//   --seq S,...   sequence lengths (default 128), one graph each
//   --keep-aux    keep the pointwise, reduction, matmul and RNG descriptors until the end (by
//                 default each is destroyed once its operation is built, as cudnn-frontend does)
// Prints one line per graph: "graph KIND seq=S ops=N engine=E".
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace {

void die(const char* what, int code) {
  std::fprintf(stderr, "graph_ops: %s failed: %d\n", what, code);
  std::exit(1);
}
void ck(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) die(what, int(s));
}
#define CK(call) ck(call, #call)

struct Options {
  bool sdpa = false, bwd = false, matmul = false, native = false, causal = false, bias = false, keep_aux = false;
  bool norm = false;
  double dropout = 0;
  std::vector<int64_t> seq = {128};
};

cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  CK(cudnnBackendCreateDescriptor(type, &d));
  return d;
}

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
         const void* v) {
  ck(cudnnBackendSetAttribute(d, name, type, n, v), "cudnnBackendSetAttribute");
}

class Graph {
 public:
  explicit Graph(const Options& o) : o_(o) {}
  ~Graph() {
    for (auto d : owned_) cudnnBackendDestroyDescriptor(d);
  }

  // A 4-D tensor; strides default to packed row-major. Virtual tensors are the graph's own.
  cudnnBackendDescriptor_t tensor(std::vector<int64_t> dims, cudnnDataType_t dt, bool is_virtual = false,
                                  std::vector<int64_t> strides = {}, bool by_value = false) {
    if (strides.empty()) {
      strides.assign(dims.size(), 1);
      for (int i = int(dims.size()) - 2; i >= 0; --i) strides[size_t(i)] = strides[size_t(i) + 1] * dims[size_t(i) + 1];
    }
    int64_t uid = next_uid_++, alignment = 16;
    auto t = keep(create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    CK(cudnnBackendFinalize(t));
    if (!is_virtual) uids_.push_back(uid);
    return t;
  }

  // out = mode(x[, b[, t]]).
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t out, cudnnBackendDescriptor_t t = nullptr) {
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    auto pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    operation(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, pw,
              {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw}, {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x},
               {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b}, {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t},
               {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out}});
  }

  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t out) {
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    auto r = create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, r,
              {{CUDNN_ATTR_OPERATION_REDUCTION_DESC, r}, {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x},
               {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, out}});
  }

  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    auto m = create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set(m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, m,
              {{CUDNN_ATTR_OPERATION_MATMUL_DESC, m}, {CUDNN_ATTR_OPERATION_MATMUL_ADESC, a},
               {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b}, {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c}});
  }

  void rng(double probability, cudnnBackendDescriptor_t out) {
    cudnnRngDistribution_t dist = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
    auto r = create(CUDNN_BACKEND_RNG_DESCRIPTOR);
    set(r, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1, &dist);
    set(r, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1, &probability);
    operation(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR, r,
              {{CUDNN_ATTR_OPERATION_RNG_DESC, r}, {CUDNN_ATTR_OPERATION_RNG_YDESC, out}});
  }

  // Finalizes the graph, asks the heuristics, builds the first plan that builds, runs it once.
  int64_t run(cudnnHandle_t handle) {
    auto graph = keep(create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops_.size()), ops_.data());
    CK(cudnnBackendFinalize(graph));
    auto heur = keep(create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    CK(cudnnBackendFinalize(heur));
    int64_t count = 0;
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<cudnnBackendDescriptor_t> cfgs(static_cast<size_t>(count));
    for (auto& c : cfgs) c = keep(create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                cfgs.data()));
    for (int64_t i = 0; i < count; ++i) {
      auto plan = keep(create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[size_t(i)]);
      if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0, n = 0;
      CK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws));
      void* workspace = nullptr;
      if (ws > 0 && cudaMalloc(&workspace, size_t(ws)) != cudaSuccess) die("cudaMalloc", 0);
      std::vector<void*> ptrs;
      for (size_t k = 0; k < uids_.size(); ++k) {
        void* p = nullptr;
        if (cudaMalloc(&p, 4096) != cudaSuccess) die("cudaMalloc", 0);
        ptrs.push_back(p);
      }
      auto pack = keep(create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
      set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data());
      set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids_.size()), uids_.data());
      set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
      CK(cudnnBackendFinalize(pack));
      CK(cudnnBackendExecute(handle, plan, pack));
      for (void* p : ptrs) cudaFree(p);
      if (workspace) cudaFree(workspace);
      auto engine = keep(create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
      int64_t index = -1;
      CK(cudnnBackendGetAttribute(cfgs[size_t(i)], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                  &engine));
      CK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index));
      return index;
    }
    die("no plan built", 0);
    return -1;
  }

  size_t ops() const { return ops_.size(); }

  // A normalization (cudnnBackendNormMode_t; a forward's phase, 0 inference, 1 training) of the
  // given tensors.
  void norm(cudnnBackendDescriptorType_t type, cudnnBackendNormMode_t mode, int phase,
            std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> attrs) {
    auto d = keep(create(type));
    bool fwd = type == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR;
    set(d, fwd ? CUDNN_ATTR_OPERATION_NORM_FWD_MODE : CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
    if (fwd) {
      auto p = cudnnBackendNormFwdPhase_t(phase);
      set(d, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &p);
    }
    for (const auto& [name, desc] : attrs) set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc);
    CK(cudnnBackendFinalize(d));
    ops_.push_back(d);
  }

  // An operation of the given descriptors without an auxiliary one.
  void op(cudnnBackendDescriptorType_t type,
          std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> attrs) {
    auto d = keep(create(type));
    for (const auto& [name, desc] : attrs) set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc);
    CK(cudnnBackendFinalize(d));
    ops_.push_back(d);
  }

 private:
  cudnnBackendDescriptor_t keep(cudnnBackendDescriptor_t d) {
    owned_.push_back(d);
    return d;
  }
  // An operation of the given descriptors (null ones left unset), built on its finalized
  // auxiliary descriptor, which then goes (cudnn-frontend's are temporaries).
  void operation(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t aux,
                 std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> attrs) {
    CK(cudnnBackendFinalize(aux));
    auto op = keep(create(type));
    for (const auto& [name, desc] : attrs) {
      if (desc != nullptr) set(op, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc);
    }
    CK(cudnnBackendFinalize(op));
    ops_.push_back(op);
    if (o_.keep_aux) {
      keep(aux);
    } else {
      CK(cudnnBackendDestroyDescriptor(aux));
    }
  }

  const Options& o_;
  int64_t next_uid_ = 1;
  std::vector<int64_t> uids_;
  std::vector<cudnnBackendDescriptor_t> ops_, owned_;
};

const int64_t kB = 2, kH = 8, kD = 64;

// S = Q·Kᵀ (K given as [b,h,s,d], read transposed), scaled, masked, softmax with statistics; the
// probabilities P (a virtual tensor) and the tensors the backward reuses.
struct Softmax {
  cudnnBackendDescriptor_t q, kt, p;
};

Softmax softmax_part(Graph& g, const Options& o, int64_t s) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  Softmax r;
  r.q = g.tensor({kB, kH, s, kD}, bf16);
  r.kt = g.tensor({kB, kH, kD, s}, bf16, false, {kH * s * kD, s * kD, 1, kD});
  auto scores = g.tensor({kB, kH, s, s}, f32, true);
  g.matmul(r.q, r.kt, scores);
  auto scale = g.tensor({1, 1, 1, 1}, f32, false, {}, true);
  auto scaled = g.tensor({kB, kH, s, s}, f32, true);
  g.pointwise(CUDNN_POINTWISE_MUL, scores, scale, scaled);
  if (o.bias) {
    auto bias = g.tensor({kB, 1, s, s}, bf16);
    auto biased = g.tensor({kB, kH, s, s}, f32, true);
    g.pointwise(CUDNN_POINTWISE_ADD, scaled, bias, biased);
    scaled = biased;
  }
  if (o.causal) {
    auto row = g.tensor({kB, kH, s, s}, CUDNN_DATA_INT32, true);
    auto col = g.tensor({kB, kH, s, s}, CUDNN_DATA_INT32, true);
    auto keep = g.tensor({kB, kH, s, s}, CUDNN_DATA_BOOLEAN, true);
    auto neg_inf = g.tensor({1, 1, 1, 1}, f32, false, {}, true);
    auto masked = g.tensor({kB, kH, s, s}, f32, true);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scaled, nullptr, row);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scaled, nullptr, col);
    g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep);
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scaled, neg_inf, masked, keep);
    scaled = masked;
  }
  auto max = g.tensor({kB, kH, s, 1}, f32, true);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scaled, max);
  auto shifted = g.tensor({kB, kH, s, s}, f32, true);
  g.pointwise(CUDNN_POINTWISE_SUB, scaled, max, shifted);
  auto e = g.tensor({kB, kH, s, s}, f32, true);
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, e);
  auto sum = g.tensor({kB, kH, s, 1}, f32, true);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  auto log = g.tensor({kB, kH, s, 1}, f32, true);
  g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, log);
  auto stats = g.tensor({kB, kH, s, 1}, f32);
  g.pointwise(CUDNN_POINTWISE_ADD, log, max, stats);
  r.p = g.tensor({kB, kH, s, s}, f32, true);
  g.pointwise(CUDNN_POINTWISE_DIV, e, sum, r.p);
  if (o.dropout > 0) {
    auto mask = g.tensor({kB, kH, s, s}, f32, true);
    g.rng(1.0 - o.dropout, mask);
    auto dropped = g.tensor({kB, kH, s, s}, f32, true);
    g.pointwise(CUDNN_POINTWISE_MUL, r.p, mask, dropped);
    auto rescale = g.tensor({1, 1, 1, 1}, f32, false, {}, true);
    auto p2 = g.tensor({kB, kH, s, s}, f32, true);
    g.pointwise(CUDNN_POINTWISE_MUL, dropped, rescale, p2);
    r.p = p2;
  }
  return r;
}

void sdpa_forward(Graph& g, const Options& o, int64_t s) {
  Softmax sm = softmax_part(g, o, s);
  auto v = g.tensor({kB, kH, s, kD}, CUDNN_DATA_BFLOAT16);
  auto out = g.tensor({kB, kH, s, kD}, CUDNN_DATA_BFLOAT16);
  g.matmul(sm.p, v, out);
}

void sdpa_backward(Graph& g, const Options& o, int64_t s) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  Softmax sm = softmax_part(g, o, s);
  auto d_o = g.tensor({kB, kH, s, kD}, bf16);
  auto pt = g.tensor({kB, kH, s, s}, f32, true, {kH * s * s, s * s, 1, s});
  g.pointwise(CUDNN_POINTWISE_IDENTITY, sm.p, nullptr, pt);
  auto dv = g.tensor({kB, kH, s, kD}, bf16);
  g.matmul(pt, d_o, dv);
  auto vt = g.tensor({kB, kH, kD, s}, bf16, false, {kH * s * kD, s * kD, 1, kD});
  auto dp = g.tensor({kB, kH, s, s}, f32, true);
  g.matmul(d_o, vt, dp);
  auto ds = g.tensor({kB, kH, s, s}, f32, true);
  g.pointwise(CUDNN_POINTWISE_MUL, dp, sm.p, ds);
  auto k = g.tensor({kB, kH, s, kD}, bf16);
  auto dq = g.tensor({kB, kH, s, kD}, bf16);
  g.matmul(ds, k, dq);
  auto dst = g.tensor({kB, kH, s, s}, f32, true, {kH * s * s, s * s, 1, s});
  g.pointwise(CUDNN_POINTWISE_IDENTITY, ds, nullptr, dst);
  auto dk = g.tensor({kB, kH, s, kD}, bf16);
  g.matmul(dst, sm.q, dk);
}

// cuDNN's own SDPA operation (what cudnn-frontend uses for PyTorch's forward without a mask or
// dropout): Q, K, V, O, the softmax statistics and the scale.
void native_sdpa(Graph& g, int64_t s) {
  auto q = g.tensor({kB, kH, s, kD}, CUDNN_DATA_BFLOAT16);
  auto k = g.tensor({kB, kH, s, kD}, CUDNN_DATA_BFLOAT16);
  auto v = g.tensor({kB, kH, s, kD}, CUDNN_DATA_BFLOAT16);
  auto o = g.tensor({kB, kH, s, kD}, CUDNN_DATA_BFLOAT16);
  auto stats = g.tensor({kB, kH, s, 1}, CUDNN_DATA_FLOAT);
  auto scale = g.tensor({1, 1, 1, 1}, CUDNN_DATA_FLOAT, false, {}, true);
  g.op(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
       {{CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q}, {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v}, {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, stats}, {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale}});
}

// A transformer's layer norm, training (as cudnn-frontend's layernorm sample: rows of 512 as
// [rows,512,1,1], saving mean and inverse variance); then a batch norm's backward behind a ReLU
// backward (cudnn-frontend's "DBN Add Relu" sample begins with the pointwise operation).
void layernorm(Graph& g, int64_t s) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  auto x = g.tensor({kB * s, 512, 1, 1}, bf16);
  auto scale = g.tensor({1, 512, 1, 1}, f32);
  auto bias = g.tensor({1, 512, 1, 1}, f32);
  auto y = g.tensor({kB * s, 512, 1, 1}, bf16);
  auto mean = g.tensor({kB * s, 1, 1, 1}, f32);
  auto inv_var = g.tensor({kB * s, 1, 1, 1}, f32);
  auto eps = g.tensor({1, 1, 1, 1}, f32, false, {}, true);
  g.norm(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, CUDNN_LAYER_NORM, 1,
         {{CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, x}, {CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, scale},
          {CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, bias}, {CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, eps},
          {CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, mean}, {CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, inv_var},
          {CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, y}});
}

void batchnorm_backward(Graph& g, int64_t s) {
  const cudnnDataType_t f16 = CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
  const int64_t n = 4, c = 32, hw = s;
  auto y_grad = g.tensor({n, c, hw, hw}, f16);
  auto x = g.tensor({n, c, hw, hw}, f16);
  auto dy = g.tensor({n, c, hw, hw}, f32, true);
  g.pointwise(CUDNN_POINTWISE_RELU_BWD, y_grad, x, dy);
  auto scale = g.tensor({1, c, 1, 1}, f32);
  auto mean = g.tensor({1, c, 1, 1}, f32);
  auto inv_var = g.tensor({1, c, 1, 1}, f32);
  auto dscale = g.tensor({1, c, 1, 1}, f32);
  auto dbias = g.tensor({1, c, 1, 1}, f32);
  auto dx = g.tensor({n, c, hw, hw}, f16);
  g.norm(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR, CUDNN_BATCH_NORM, 0,
         {{CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, x}, {CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, dy},
          {CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, scale}, {CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, mean},
          {CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, inv_var},
          {CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, dscale}, {CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, dbias},
          {CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, dx}});
}

void plain_matmul(Graph& g, int64_t s) {
  auto a = g.tensor({1, kB * s, 512}, CUDNN_DATA_BFLOAT16);
  auto b = g.tensor({1, 512, 2048}, CUDNN_DATA_BFLOAT16, false, {512 * 2048, 1, 512});
  auto c = g.tensor({1, kB * s, 2048}, CUDNN_DATA_FLOAT, true);
  g.matmul(a, b, c);
  auto bias = g.tensor({1, 1, 2048}, CUDNN_DATA_BFLOAT16);
  auto biased = g.tensor({1, kB * s, 2048}, CUDNN_DATA_FLOAT, true);
  g.pointwise(CUDNN_POINTWISE_ADD, c, bias, biased);
  auto out = g.tensor({1, kB * s, 2048}, CUDNN_DATA_BFLOAT16);
  g.pointwise(CUDNN_POINTWISE_RELU_FWD, biased, nullptr, out);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sdpa") o.sdpa = true;
    else if (a == "--sdpa-bwd") o.bwd = true;
    else if (a == "--matmul") o.matmul = true;
    else if (a == "--native") o.native = true;
    else if (a == "--norm") o.norm = true;
    else if (a == "--causal") o.causal = true;
    else if (a == "--bias") o.bias = true;
    else if (a == "--keep-aux") o.keep_aux = true;
    else if (a == "--dropout" && i + 1 < argc) o.dropout = std::atof(argv[++i]);
    else if (a == "--seq" && i + 1 < argc) {
      o.seq.clear();
      std::string list = argv[++i];
      for (size_t at = 0; at < list.size();) {
        size_t comma = list.find(',', at);
        o.seq.push_back(std::atoll(list.substr(at, comma - at).c_str()));
        at = comma == std::string::npos ? list.size() : comma + 1;
      }
    } else {
      std::fprintf(stderr, "graph_ops: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  cudnnHandle_t handle = nullptr;
  CK(cudnnCreate(&handle));
  for (int64_t s : o.seq) {
    struct Kind {
      bool on;
      const char* name;
    } kinds[] = {{o.sdpa, "sdpa_fwd"},      {o.bwd, "sdpa_bwd"},  {o.matmul, "matmul"},
                 {o.native, "sdpa_native"}, {o.norm, "layernorm"}, {o.norm, "batchnorm_bwd"}};
    for (const Kind& k : kinds) {
      if (!k.on) continue;
      Graph g(o);
      if (std::strcmp(k.name, "sdpa_fwd") == 0) sdpa_forward(g, o, s);
      else if (std::strcmp(k.name, "sdpa_bwd") == 0) sdpa_backward(g, o, s);
      else if (std::strcmp(k.name, "sdpa_native") == 0) native_sdpa(g, s);
      else if (std::strcmp(k.name, "layernorm") == 0) layernorm(g, s);
      else if (std::strcmp(k.name, "batchnorm_bwd") == 0) batchnorm_backward(g, s);
      else plain_matmul(g, s);
      int64_t engine = g.run(handle);
      std::printf("graph %s seq=%lld ops=%zu engine=%lld\n", k.name, static_cast<long long>(s), g.ops(),
                  static_cast<long long>(engine));
    }
  }
  CK(cudnnDestroy(handle));
  return 0;
}
