// capture_cudnn.h's longer helpers (cuDNN capture logic); see capture_cudnn_detail.h.
#include "capture_cudnn_detail.h"

#include <stdio.h>
#include <string.h>

#include "api.h"
#include "cudnn_problem.h"
#include "fork.h"
#include "problem_table.h"
#include "problem_text.h"
#include "recorder.h"
#include "resolve.h"

namespace cuprobe::shim {

namespace {

template <typename T>
T element(const void* elements, int64_t i) {
  T v;
  memcpy(&v, static_cast<const char*>(elements) + i * int64_t(sizeof(T)), sizeof v);
  return v;
}

void copy_i64(int64_t* dst, int max, const void* elements, int64_t count, uint8_t* n_out) {
  int n = count < max ? int(count) : max;
  for (int i = 0; i < n; ++i) dst[i] = element<int64_t>(elements, i);
  if (n_out) *n_out = uint8_t(n);
}

void copy_i32_from_i64(int32_t* dst, int max, const void* elements, int64_t count) {
  int n = count < max ? int(count) : max;
  for (int i = 0; i < n; ++i) dst[i] = int32_t(element<int64_t>(elements, i));
}

void set_tensor_attribute(TensorState& t, cudnnBackendAttributeName_t name, const void* el, int64_t count) {
  switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE: t.dtype = int8_t(element<cudnnDataType_t>(el, 0)); break;
    case CUDNN_ATTR_TENSOR_DIMENSIONS: copy_i64(t.dims, kMaxDims, el, count, &t.nbdims); break;
    case CUDNN_ATTR_TENSOR_STRIDES: copy_i64(t.strides, kMaxDims, el, count, nullptr); break;
    case CUDNN_ATTR_TENSOR_UNIQUE_ID: t.uid = element<int64_t>(el, 0); break;
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT: t.alignment = element<int64_t>(el, 0); break;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL: t.is_virtual = element<bool>(el, 0); break;
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE: t.by_value = element<bool>(el, 0); break;
    default: break;
  }
}

void set_conv_attribute(ConvState& c, cudnnBackendAttributeName_t name, const void* el, int64_t count) {
  switch (name) {
    case CUDNN_ATTR_CONVOLUTION_COMP_TYPE: c.compute = int8_t(element<cudnnDataType_t>(el, 0)); break;
    case CUDNN_ATTR_CONVOLUTION_CONV_MODE: c.mode = int8_t(element<cudnnConvolutionMode_t>(el, 0)); break;
    case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS: c.spatial = uint8_t(element<int64_t>(el, 0)); break;
    case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: copy_i32_from_i64(c.pre, 3, el, count); break;
    case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS: copy_i32_from_i64(c.post, 3, el, count); break;
    case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES: copy_i32_from_i64(c.stride, 3, el, count); break;
    case CUDNN_ATTR_CONVOLUTION_DILATIONS: copy_i32_from_i64(c.dilation, 3, el, count); break;
    default: break;
  }
}

// Where an operation attribute puts its descriptor: the auxiliary descriptor (convolution,
// pointwise, matmul, reduction), an input slot, or the output (slot 2).
enum Role { kNone, kAux, kIn0, kIn1, kIn2, kOut };

Role op_role(int kind, cudnnBackendAttributeName_t name) {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC ? kAux
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X       ? kIn0
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W       ? kIn1
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y       ? kOut
                                                                        : kNone;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC ? kAux
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY      ? kIn0
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W       ? kIn1
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX      ? kOut
                                                                         : kNone;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC ? kAux
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X       ? kIn0
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY      ? kIn1
             : name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW      ? kOut
                                                                           : kNone;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR ? kAux
             : name == CUDNN_ATTR_OPERATION_POINTWISE_XDESC       ? kIn0
             : name == CUDNN_ATTR_OPERATION_POINTWISE_BDESC       ? kIn1
             : name == CUDNN_ATTR_OPERATION_POINTWISE_DYDESC      ? kIn1
             : name == CUDNN_ATTR_OPERATION_POINTWISE_TDESC       ? kIn2
             : name == CUDNN_ATTR_OPERATION_POINTWISE_YDESC       ? kOut
             : name == CUDNN_ATTR_OPERATION_POINTWISE_DXDESC      ? kOut
                                                                  : kNone;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_MATMUL_DESC    ? kAux
             : name == CUDNN_ATTR_OPERATION_MATMUL_ADESC ? kIn0
             : name == CUDNN_ATTR_OPERATION_MATMUL_BDESC ? kIn1
             : name == CUDNN_ATTR_OPERATION_MATMUL_CDESC ? kOut
                                                         : kNone;
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_REDUCTION_DESC    ? kAux
             : name == CUDNN_ATTR_OPERATION_REDUCTION_XDESC ? kIn0
             : name == CUDNN_ATTR_OPERATION_REDUCTION_YDESC ? kOut
                                                            : kNone;
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_NORM_FWD_XDESC        ? kIn0
             : name == CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC ? kIn1
             : name == CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC  ? kIn2
             : name == CUDNN_ATTR_OPERATION_NORM_FWD_YDESC      ? kOut
                                                                : kNone;
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_NORM_BWD_XDESC        ? kIn0
             : name == CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC     ? kIn1
             : name == CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC ? kIn2
             : name == CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC     ? kOut
                                                                : kNone;
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_RNG_DESC ? kAux : name == CUDNN_ATTR_OPERATION_RNG_YDESC ? kOut : kNone;
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC   ? kIn0
             : name == CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC ? kIn1
             : name == CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC ? kIn2
             : name == CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC ? kOut
                                                           : kNone;
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
      return name == CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC    ? kIn0
             : name == CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC  ? kIn1
             : name == CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC  ? kIn2
             : name == CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC ? kOut
                                                            : kNone;
    default: return kNone;
  }
}

void set_op_attribute(DescEntry& e, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                      const void* el) {
  OpState& op = e.u.op;
  if (name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA || name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA ||
      name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA) {
    double beta = type == CUDNN_TYPE_DOUBLE  ? element<double>(el, 0)
                  : type == CUDNN_TYPE_FLOAT ? element<float>(el, 0)
                                             : 1;
    op.accumulates = beta != 0;
    return;
  }
  if ((e.kind == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR && name == CUDNN_ATTR_OPERATION_NORM_FWD_MODE) ||
      (e.kind == CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR && name == CUDNN_ATTR_OPERATION_NORM_BWD_MODE)) {
    op.mode = element<int32_t>(el, 0);
    op.mode_set = 1;
    return;
  }
  if (e.kind == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR && name == CUDNN_ATTR_OPERATION_NORM_FWD_PHASE) {
    op.norm_phase = uint8_t(element<int32_t>(el, 0) + 1);
    return;
  }
  // cuDNN's own attention operation: what its optional tensors say (the problem's parameters).
  if (e.kind == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR) {
    int bit = name == CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC           ? kSdpaStats
              : name == CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC  ? kSdpaPaged
              : name == CUDNN_ATTR_OPERATION_SDPA_FWD_BLOCK_MASK_DESC   ? kSdpaBlockMask
              : name == CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC     ? kSdpaRagged
              : name == CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC    ? kSdpaRagged
                                                                        : 0;
    if (bit != 0) op.mode |= bit;
  }
  if (e.kind == CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR &&
      (name == CUDNN_ATTR_OPERATION_SDPA_BWD_SEQ_LEN_QDESC || name == CUDNN_ATTR_OPERATION_SDPA_BWD_SEQ_LEN_KVDESC)) {
    op.mode |= kSdpaRagged;
  }
  Role role = op_role(e.kind, name);
  if (role == kNone) return;
  void* desc = element<void*>(el, 0);
  switch (role) {
    case kAux: {
      op.conv = desc;
      // The auxiliary descriptor's mode (pointwise mode, reduction operator, matmul compute type)
      // is copied now: cudnn-frontend 1.x destroys it once the operation is built, before the
      // graph is finalized (cuDNN keeps what it needs), and the graph's problem reads the modes.
      const DescEntry* aux = desc_find(desc);
      if (aux != nullptr && (aux->kind == CUDNN_BACKEND_POINTWISE_DESCRIPTOR || aux->kind == CUDNN_BACKEND_REDUCTION_DESCRIPTOR ||
                             aux->kind == CUDNN_BACKEND_MATMUL_DESCRIPTOR || aux->kind == CUDNN_BACKEND_RNG_DESCRIPTOR)) {
        op.mode = aux->u.op.mode;
        op.mode_set = 1;
      }
      break;
    }
    case kIn0: op.tensors[0] = desc; break;
    case kIn1: op.tensors[1] = desc; break;
    case kIn2: op.tensors[2] = desc; break;
    default: op.tensors[kOpOutput] = desc; break;
  }
}

bool is_op_kind(int kind) {
  return kind >= CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR && kind != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR &&
         kind != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR && kind != CUDNN_BACKEND_TENSOR_DESCRIPTOR &&
         kind != CUDNN_BACKEND_MATMUL_DESCRIPTOR && kind != CUDNN_BACKEND_REDUCTION_DESCRIPTOR &&
         kind != CUDNN_BACKEND_RESAMPLE_DESCRIPTOR && kind != CUDNN_BACKEND_RNG_DESCRIPTOR &&
         kind != CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR && kind != CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR &&
         kind < kKindBackendLimit;
}

// The knob set sorted by knob type, so that the same configuration is always the same set. A knob
// at -1 is one the configuration leaves to the engine: cuDNN's API log lists every knob of the
// engine, those at -1 included ("kernel_cfg=26,stages=-1"); cuprobe's plan identity and text leave
// them out, whether a configuration holds them or not (docs/trace-format.md, "Knobs").
int sorted_knobs(const KnobSet& knobs, trace::Knob* sorted) {
  int m = knobs.n < kMaxKnobs ? knobs.n : kMaxKnobs;
  int n = 0;
  for (int i = 0; i < m; ++i) {
    if (knobs.values[i] != -1) sorted[n++] = trace::Knob{knobs.types[i], 0, knobs.values[i]};
  }
  for (int i = 1; i < n; ++i) {
    for (int j = i; j > 0 && sorted[j].type < sorted[j - 1].type; --j) {
      trace::Knob tmp = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = tmp;
    }
  }
  return n;
}

uint32_t knobs_id(const KnobSet& knobs) {
  trace::Knob sorted[kMaxKnobs];
  int n = sorted_knobs(knobs, sorted);
  return intern_knobs(t_state, sorted, n);
}

uint32_t note_bits(const BackendFns& b, void* engine, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type) {
  int32_t notes[16];
  int64_t n = 0;
  if (b.get(engine, name, type, 16, &n, notes) != CUDNN_STATUS_SUCCESS) return 0;
  uint32_t bits = 0;
  for (int64_t i = 0; i < n && i < 16; ++i) {
    if (notes[i] >= 0 && notes[i] < 32) bits |= 1u << notes[i];
  }
  return bits;
}

}  // namespace

// Asks cuDNN which engine and knobs an engine configuration holds, and the engine's notes. The
// configuration may have been filled by heuristics inside cuDNN, where the mirror cannot see.
void query_cfg(EngineCfgState& cfg, void* cfg_desc) {
  cfg.queried = 1;
  BackendFns b = backend_fns();
  if (!b.ok()) return;
  cudnnBackendDescriptor_t engine = nullptr;
  if (b.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) == CUDNN_STATUS_SUCCESS) {
    int64_t n = 0;
    if (b.get(cfg_desc, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) ==
        CUDNN_STATUS_SUCCESS) {
      int64_t index = -1;
      if (b.get(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) == CUDNN_STATUS_SUCCESS) {
        cfg.engine_index = index;
      }
      cfg.notes = note_bits(b, engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE);
      cfg.behavior = note_bits(b, engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE);
    }
    b.destroy(engine);
  }
  cudnnBackendDescriptor_t knobs[kMaxKnobs] = {};
  int made = 0;
  while (made < kMaxKnobs && b.create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[made]) == CUDNN_STATUS_SUCCESS) ++made;
  int64_t n = 0;
  if (made > 0 && b.get(cfg_desc, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &n, knobs) ==
                      CUDNN_STATUS_SUCCESS) {
    cfg.knobs.n = 0;
    for (int64_t i = 0; i < n && i < made; ++i) {
      cudnnBackendKnobType_t type;
      int64_t value = 0, got = 0;
      if (b.get(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &got, &type) != CUDNN_STATUS_SUCCESS ||
          b.get(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &got, &value) != CUDNN_STATUS_SUCCESS) {
        continue;
      }
      cfg.knobs.types[cfg.knobs.n] = type;
      cfg.knobs.values[cfg.knobs.n] = value;
      cfg.knobs.n++;
    }
  }
  for (int i = 0; i < made; ++i) b.destroy(knobs[i]);
}

namespace {

// The problem of a graph of more operations than its mirror entry keeps, read when this thread
// set its operations; its finalize, which follows on the same thread, interns it. (A graph
// finalized elsewhere gets the problem of the operations its entry kept.)
struct BigGraph {
  const DescEntry* graph;
  int64_t min_alignment;
  trace::ProblemDesc desc;
};
__thread BigGraph t_big_graph __attribute__((tls_model("initial-exec")));

// The operation graph this thread finalized last: plans are built right after their graph, on
// the same thread, so a plan whose configuration cannot be traced back to a graph belongs to it.
__thread ProblemLink t_last_problem __attribute__((tls_model("initial-exec")));

ProblemLink link_of(const void* graph) {
  const DescEntry* g = desc_find(graph);
  if (g == nullptr || g->kind != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) return ProblemLink{};
  uint64_t align = g->u.graph.min_alignment > 0 ? uint64_t(g->u.graph.min_alignment) : 0;
  return ProblemLink{g->u.graph.problem_hash, g->u.graph.problem_id, uint32_t(align > UINT32_MAX ? UINT32_MAX : align)};
}

void finalize_graph(DescEntry& e) {
  trace::ProblemDesc d{};
  GraphState& g = e.u.graph;
  if (t_big_graph.graph == &e) {  // its problem read from all its operations when they were set
    t_big_graph.graph = nullptr;
    g.min_alignment = t_big_graph.min_alignment;
    g.problem_id = intern_problem(t_state, t_big_graph.desc, &g.problem_hash);
    return;
  }
  if (!graph_problem(d, g, &g.min_alignment)) return;
  g.problem_id = intern_problem(t_state, d, &g.problem_hash);
}

void finalize_plan(DescEntry& e, const void* desc, cudnnStatus_t status) {
  PlanState& plan = e.u.plan;
  if (EngineCfgState* cfg = plan_cfg(plan)) {
    EngineCfgState& c = *cfg;
    plan.engine = c.engine_index;
    plan.notes = c.notes;
    plan.behavior = c.behavior;
    plan.knobs_id = knobs_id(c.knobs);
    plan.problem_id = c.problem.id;
    plan.problem_hash = c.problem.hash;
    plan.min_alignment = c.problem.min_alignment;
  } else {
    plan.engine = -1;
  }
  if (status != CUDNN_STATUS_SUCCESS) return;
  BackendFns b = backend_fns();
  int64_t workspace = 0, n = 0;
  if (b.get && b.get(const_cast<void*>(desc), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                     &workspace) == CUDNN_STATUS_SUCCESS) {
    plan.workspace = uint64_t(workspace);
  }
}

// Per-thread cache of legacy problems: raw key -> (problem id, hash). Direct-mapped.
constexpr uint32_t kSigCacheSlots = 128;
struct SigCacheSlot {
  uint64_t key;
  uint64_t hash;
  uint32_t id;
  uint32_t pad;
};
__thread SigCacheSlot t_sig_cache[kSigCacheSlots] __attribute__((tls_model("initial-exec")));

struct RawKey {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  void add_str(const char* s) { add(s, strlen(s)); }
  void add_tensor(const TensorState* t) {
    if (t == nullptr) {
      add("-", 1);
      return;
    }
    add(&t->dtype, 4);
    add(&t->format, 4);
    add(t->dims, sizeof(int64_t) * t->nbdims);
    add(t->strides, sizeof(int64_t) * t->nbdims);
  }
};

// Looks the raw key up; on a miss, `build` fills in the problem and it is interned.
template <typename Build>
ProblemRef cached_problem(uint64_t key, Build build) {
  SigCacheSlot& slot = t_sig_cache[key % kSigCacheSlots];
  if (slot.key == key && slot.id != 0) return ProblemRef{slot.id, slot.hash};
  trace::ProblemDesc d{};
  d.math_type = -1;
  if (!build(d)) return ProblemRef{};
  ProblemRef p;
  p.id = intern_problem(t_state, d, &p.hash);
  slot = SigCacheSlot{key, p.hash, p.id, 0};
  return p;
}

// The forking thread's caches hold problem ids of the parent's file; the child interns its
// problems anew (problem_table.cpp), so a cached id would name a problem its file never had.
void capture_after_fork() {
  memset(t_sig_cache, 0, sizeof t_sig_cache);
  t_last_problem = ProblemLink{};
}
CUPROBE_FORK_CHILD_RESET(capture_after_fork);

const TensorState* legacy_tensor(const void* d) {
  DescEntry* e = desc_find(d);
  return e && (e->kind == kLegacyTensor || e->kind == kLegacyFilter) && e->u.tensor.nbdims > 0 ? &e->u.tensor : nullptr;
}

}  // namespace

EngineCfgState* plan_cfg(PlanState& plan) {
  DescEntry* cfg = desc_find(plan.cfg);
  if (cfg == nullptr || cfg->kind != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) return nullptr;
  EngineCfgState& c = cfg->u.cfg;
  DescEntry* engine = desc_find(c.engine);
  if (engine && engine->kind == CUDNN_BACKEND_ENGINE_DESCRIPTOR) {
    if (c.engine_index < 0) c.engine_index = engine->u.engine.global_index;
    if (c.problem.empty()) c.problem = engine->u.engine.problem;
  }
  if (c.problem.empty()) c.problem = t_last_problem;
  if (!c.queried) query_cfg(c, plan.cfg);
  return &c;
}

uint32_t cfg_knobs_id(const EngineCfgState& cfg) { return knobs_id(cfg.knobs); }

BackendFns backend_fns() {
  return BackendFns{
      reinterpret_cast<decltype(&::cudnnBackendCreateDescriptor)>(real_function(ApiId::cudnnBackendCreateDescriptor)),
      reinterpret_cast<decltype(&::cudnnBackendDestroyDescriptor)>(real_function(ApiId::cudnnBackendDestroyDescriptor)),
      reinterpret_cast<decltype(&::cudnnBackendSetAttribute)>(real_function(ApiId::cudnnBackendSetAttribute)),
      reinterpret_cast<decltype(&::cudnnBackendGetAttribute)>(real_function(ApiId::cudnnBackendGetAttribute)),
      reinterpret_cast<decltype(&::cudnnBackendFinalize)>(real_function(ApiId::cudnnBackendFinalize))};
}

uint64_t cfg_key(EngineCfgState& cfg, void* cfg_desc) {
  if (!cfg.queried) query_cfg(cfg, cfg_desc);
  if (cfg.engine_index < 0) return 0;
  trace::Knob sorted[kMaxKnobs];
  int n = sorted_knobs(cfg.knobs, sorted);
  char text[512];
  size_t len = render_knobs(sorted, n, text, sizeof text);
  if (len >= sizeof text) return 0;
  return plan_key(cfg.engine_index, text);
}

ProblemLink heur_problem(const DescEntry& heur) { return link_of(heur.u.heur.graph); }

void mirror_set_attribute(DescEntry& e, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                          int64_t count, const void* el) {
  if (el == nullptr || count <= 0) return;
  switch (e.kind) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: set_tensor_attribute(e.u.tensor, name, el, count); return;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: set_conv_attribute(e.u.conv, name, el, count); return;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      if (name == CUDNN_ATTR_POINTWISE_MODE) e.u.op.mode = element<int32_t>(el, 0);
      return;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      if (name == CUDNN_ATTR_REDUCTION_OPERATOR) e.u.op.mode = element<int32_t>(el, 0);
      return;
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
      if (name == CUDNN_ATTR_MATMUL_COMP_TYPE) e.u.op.mode = element<int32_t>(el, 0);
      return;
    case CUDNN_BACKEND_RNG_DESCRIPTOR:
      // A Bernoulli distribution's probability (dropout's mask), in millionths.
      if (name == CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY && type == CUDNN_TYPE_DOUBLE) {
        double p = element<double>(el, 0);
        e.u.op.mode = p >= 0 && p <= 1 ? int32_t(p * 1e6 + 0.5) : -1;
      }
      return;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (name == CUDNN_ATTR_OPERATIONGRAPH_OPS && type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        int n = count < kMaxGraphOps ? int(count) : kMaxGraphOps;
        for (int i = 0; i < n; ++i) e.u.graph.ops[i] = element<void*>(el, i);
        e.u.graph.n_ops = uint8_t(n);
        // A graph of more operations than the entry keeps (attention's composite graphs): its
        // problem now, while every operation is at hand (they are finalized before they are set),
        // interned when the graph is finalized (no record is written inside this call's capture).
        t_big_graph.graph = nullptr;
        if (count > kMaxGraphOps) {
          t_big_graph.desc = trace::ProblemDesc{};
          void* const* all = static_cast<void* const*>(el);
          if (graph_problem_of_ops(t_big_graph.desc, all, count < kMaxGraphOpsAll ? int(count) : kMaxGraphOpsAll,
                                   &t_big_graph.min_alignment)) {
            t_big_graph.graph = &e;
          }
        }
      }
      if (name == CUDNN_ATTR_OPERATIONGRAPH_HANDLE && count >= 1) e.u.graph.handle = element<void*>(el, 0);
      return;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      if (name == CUDNN_ATTR_ENGINE_OPERATION_GRAPH) e.u.engine.problem = link_of(element<void*>(el, 0));
      if (name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) e.u.engine.global_index = element<int64_t>(el, 0);
      return;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      if (name == CUDNN_ATTR_ENGINECFG_ENGINE) {
        e.u.cfg.engine = element<void*>(el, 0);
        e.u.cfg.engine_index = -1;
        if (DescEntry* eng = desc_find(e.u.cfg.engine)) {
          if (eng->kind == CUDNN_BACKEND_ENGINE_DESCRIPTOR) {
            e.u.cfg.problem = eng->u.engine.problem;
            e.u.cfg.engine_index = eng->u.engine.global_index;
          }
        }
      } else if (name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES && type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        e.u.cfg.knobs.n = 0;
        for (int64_t i = 0; i < count && e.u.cfg.knobs.n < kMaxKnobs; ++i) {
          DescEntry* k = desc_find(element<void*>(el, i));
          if (k == nullptr || k->kind != CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR) continue;
          e.u.cfg.knobs.types[e.u.cfg.knobs.n] = k->u.knob.type;
          e.u.cfg.knobs.values[e.u.cfg.knobs.n] = k->u.knob.value;
          e.u.cfg.knobs.n++;
        }
      }
      return;
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
      if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE) e.u.knob.type = element<int32_t>(el, 0);
      if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE) e.u.knob.value = element<int64_t>(el, 0);
      return;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (name == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH) e.u.heur.graph = element<void*>(el, 0);
      if (name == CUDNN_ATTR_ENGINEHEUR_MODE) e.u.heur.mode = element<int32_t>(el, 0);
      return;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      if (name == CUDNN_ATTR_EXECUTION_PLAN_HANDLE) e.u.plan.handle = element<void*>(el, 0);
      if (name == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG) e.u.plan.cfg = element<void*>(el, 0);
      return;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (name == CUDNN_ATTR_VARIANT_PACK_WORKSPACE) e.u.pack.workspace = element<void*>(el, 0);
      if (name == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS) {
        const void* ptrs[64];
        int n = count < 64 ? int(count) : 64;
        for (int i = 0; i < n; ++i) ptrs[i] = element<void*>(el, i);
        e.u.pack.n_pointers = uint32_t(count);
        e.u.pack.min_alignment = min_alignment(ptrs, n);
        e.u.pack.aliased = 0;
        for (int i = 0; i < n; ++i) {
          for (int j = i + 1; j < n; ++j) e.u.pack.aliased |= ptrs[i] != nullptr && ptrs[i] == ptrs[j];
        }
      }
      return;
    default:
      if (is_op_kind(e.kind)) set_op_attribute(e, name, type, el);
      return;
  }
}

bool mirror_get_attribute(DescEntry& e, cudnnBackendAttributeName_t name, int64_t count, const void* el) {
  // An empty heuristics list is recorded too (cuDNN had nothing, or the search budget answered a
  // fallback query: search_budget.cpp).
  if (count == 0 && e.kind == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS) return true;
  if (el == nullptr || count <= 0) return false;
  switch (e.kind) {
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (name != CUDNN_ATTR_ENGINEHEUR_RESULTS) return false;
      // The configurations cuDNN just filled belong to the heuristics' operation graph.
      for (int64_t i = 0; i < count; ++i) {
        DescEntry* cfg = desc_find(element<void*>(el, i));
        if (cfg && cfg->kind == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) {
          cfg->u.cfg.problem = link_of(e.u.heur.graph);
          cfg->u.cfg.engine_index = -1;
          cfg->u.cfg.queried = 0;
        }
      }
      return true;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      // cudnn-frontend copies a configuration by fetching its engine into a descriptor of its
      // own; that engine belongs to the same graph.
      if (name == CUDNN_ATTR_ENGINECFG_ENGINE) {
        DescEntry* engine = desc_find(element<void*>(el, 0));
        if (engine && engine->kind == CUDNN_BACKEND_ENGINE_DESCRIPTOR) {
          engine->u.engine.problem = e.u.cfg.problem;
          engine->u.engine.global_index = e.u.cfg.engine_index;
        }
      }
      return false;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      if (name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) e.u.engine.global_index = element<int64_t>(el, 0);
      return false;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) e.u.plan.workspace = uint64_t(element<int64_t>(el, 0));
      return false;
    default: return false;
  }
}

bool mirror_finalize(DescEntry& e, const void* desc, cudnnStatus_t status) {
  e.finalized = status == CUDNN_STATUS_SUCCESS;
  switch (e.kind) {
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (status == CUDNN_STATUS_SUCCESS) {
        finalize_graph(e);
        t_last_problem = link_of(desc);
      }
      return true;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      finalize_plan(e, desc, status);
      return true;
    default:
      return false;
  }
}

ProblemRef graph_problem_of(const DescEntry* graph) {
  if (graph == nullptr || graph->kind != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) return ProblemRef{};
  return ProblemRef{graph->u.graph.problem_id, graph->u.graph.problem_hash};
}

const DescEntry* graph_of_heur(const DescEntry* heur) { return heur ? desc_find(heur->u.heur.graph) : nullptr; }

void set_legacy_tensor(const void* d, int dtype, int nbdims, const int* dims, const int* strides, int format) {
  DescEntry* e = desc_find(d);
  if (e == nullptr) e = desc_create(d, kLegacyTensor);
  if (e == nullptr || e->kind != kLegacyTensor) return;
  TensorState& t = e->u.tensor;
  int n = nbdims < 0 ? 0 : (nbdims > kMaxDims ? kMaxDims : nbdims);
  t.dtype = int8_t(dtype);
  t.nbdims = uint8_t(n);
  t.format = format;
  for (int i = 0; i < n; ++i) t.dims[i] = dims ? dims[i] : 0;
  if (strides) {
    for (int i = 0; i < n; ++i) t.strides[i] = strides[i];
    return;
  }
  // Packed in the given format: NCHW is row-major; NHWC keeps C innermost.
  int64_t s = 1;
  if (format == CUDNN_TENSOR_NHWC && n >= 3) {
    t.strides[1] = s;
    s *= t.dims[1];
    for (int i = n - 1; i >= 2; --i) {
      t.strides[i] = s;
      s *= t.dims[i];
    }
    t.strides[0] = s;
  } else {
    for (int i = n - 1; i >= 0; --i) {
      t.strides[i] = s;
      s *= t.dims[i];
    }
  }
}

void set_legacy_filter(const void* d, int dtype, int format, int nbdims, const int* dims) {
  DescEntry* e = desc_find(d);
  if (e == nullptr) e = desc_create(d, kLegacyFilter);
  if (e == nullptr || e->kind != kLegacyFilter) return;
  TensorState& t = e->u.tensor;
  int n = nbdims < 0 ? 0 : (nbdims > kMaxDims ? kMaxDims : nbdims);
  t.dtype = int8_t(dtype);
  t.nbdims = uint8_t(n);
  t.format = format;
  for (int i = 0; i < n; ++i) {
    t.dims[i] = dims ? dims[i] : 0;
    t.strides[i] = 0;  // a filter's layout is its format
  }
}

void set_legacy_conv(const void* d, int n, const int* pad, const int* stride, const int* dilation, int mode,
                     int compute) {
  DescEntry* e = desc_find(d);
  if (e == nullptr) e = desc_create(d, kLegacyConvolution);
  if (e == nullptr || e->kind != kLegacyConvolution) return;
  ConvState& c = e->u.conv;
  int k = n < 0 ? 0 : (n > 3 ? 3 : n);
  c.spatial = uint8_t(k);
  c.mode = int8_t(mode);
  c.compute = int8_t(compute);
  if (c.groups == 0) c.groups = 1;
  if (c.math == 0 && e->finalized == 0) c.math = -1;
  for (int i = 0; i < k; ++i) {
    c.pre[i] = c.post[i] = pad ? pad[i] : 0;
    c.stride[i] = stride ? stride[i] : 1;
    c.dilation[i] = dilation ? dilation[i] : 1;
  }
  e->finalized = 1;  // set up at least once
}

void set_legacy_pooling(const void* d, int mode, int n, const int* window, const int* pad, const int* stride) {
  DescEntry* e = desc_find(d);
  if (e == nullptr) e = desc_create(d, kLegacyPooling);
  if (e == nullptr || e->kind != kLegacyPooling) return;
  PoolingState& p = e->u.pooling;
  int k = n < 0 ? 0 : (n > 3 ? 3 : n);
  p.mode = mode;
  p.nbdims = uint8_t(k);
  for (int i = 0; i < k; ++i) {
    p.window[i] = window ? window[i] : 0;
    p.pad[i] = pad ? pad[i] : 0;
    p.stride[i] = stride ? stride[i] : 1;
  }
}

int legacy_math_type(const void* conv) {
  DescEntry* e = desc_find(conv);
  return e && e->kind == kLegacyConvolution ? e->u.conv.math : -1;
}

ProblemRef legacy_conv_problem(ProblemOp op, const void* in0, const void* in1, const void* conv, const void* out,
                               bool bias_act) {
  const TensorState* a = legacy_tensor(in0);
  const TensorState* b = legacy_tensor(in1);
  const TensorState* o = legacy_tensor(out);
  DescEntry* c = desc_find(conv);
  if (!a || !b || !o || !c || c->kind != kLegacyConvolution) return ProblemRef{};
  RawKey key;
  key.add(&op, sizeof op);
  key.add_tensor(a);
  key.add_tensor(b);
  key.add_tensor(o);
  key.add(&c->u.conv.mode, 4);
  key.add(&c->u.conv.groups, sizeof(int32_t) * 13);
  key.add(&bias_act, sizeof bias_act);
  return cached_problem(key.h, [&](trace::ProblemDesc& d) {
    conv_problem(d, op, *a, *b, c->u.conv, *o);
    if (bias_act) d.flags |= trace::kProblemBiasAct;
    return true;
  });
}

ProblemRef legacy_bn_problem(ProblemOp op, int mode, int ops, const void* x) {
  const TensorState* t = legacy_tensor(x);
  if (t == nullptr) return ProblemRef{};
  RawKey key;
  key.add(&op, sizeof op);
  key.add_tensor(t);
  key.add(&mode, sizeof mode);
  key.add(&ops, sizeof ops);
  return cached_problem(key.h, [&](trace::ProblemDesc& d) {
    d.op = uint16_t(op);
    d.n_tensors = 1;
    problem_tensor(d.tensors[0], trace::TensorRole::kX, *t);
    d.n_params = 2;
    d.params[0] = mode;
    d.params[1] = ops;
    return true;
  });
}

ProblemRef legacy_pool_problem(ProblemOp op, const void* pool, const void* x, const void* y) {
  const TensorState* tx = legacy_tensor(x);
  const TensorState* ty = legacy_tensor(y);
  DescEntry* p = desc_find(pool);
  if (!tx || !ty || !p || p->kind != kLegacyPooling) return ProblemRef{};
  RawKey key;
  key.add(&op, sizeof op);
  key.add_tensor(tx);
  key.add_tensor(ty);
  key.add(&p->u.pooling, sizeof p->u.pooling);
  return cached_problem(key.h, [&](trace::ProblemDesc& d) {
    const PoolingState& ps = p->u.pooling;
    int n = ps.nbdims <= 3 ? ps.nbdims : 3;
    d.op = uint16_t(op);
    d.n_tensors = 2;
    problem_tensor(d.tensors[0], trace::TensorRole::kX, *tx);
    problem_tensor(d.tensors[1], trace::TensorRole::kY, *ty);
    d.n_params = 11;
    d.params[0] = ps.mode;
    d.params[1] = n;
    for (int i = 0; i < n; ++i) {
      d.params[2 + i] = ps.window[i];
      d.params[5 + i] = ps.pad[i];
      d.params[8 + i] = ps.stride[i];
    }
    return true;
  });
}

ProblemRef legacy_rnn_problem(ProblemOp op, const void* rnn, const void* x, int fwd_mode) {
  DescEntry* r = desc_find(rnn);
  DescEntry* dx = desc_find(x);
  if (!r || r->kind != kLegacyRnn || !dx || dx->kind != kLegacyRnnData) return ProblemRef{};
  RawKey key;
  key.add(&op, sizeof op);
  key.add(&r->u.rnn, sizeof r->u.rnn);
  key.add(&dx->u.rnn_data, sizeof dx->u.rnn_data);
  key.add(&fwd_mode, sizeof fwd_mode);
  return cached_problem(key.h, [&](trace::ProblemDesc& d) {
    const RnnState& rs = r->u.rnn;
    const RnnDataState& ds = dx->u.rnn_data;
    d.op = uint16_t(op);
    d.n_params = 11;
    const int64_t values[11] = {rs.cell,  rs.input_size, rs.hidden_size, rs.proj_size, rs.layers,  rs.direction,
                                rs.dtype, ds.max_seq,    ds.batch,       ds.vector,    fwd_mode};
    for (int i = 0; i < 11; ++i) d.params[i] = values[i];
    return true;
  });
}

ProblemRef legacy_ctc_problem(const void* probs, int algo) {
  const TensorState* t = legacy_tensor(probs);
  if (t == nullptr) return ProblemRef{};
  RawKey key;
  key.add("ctc", 3);
  key.add_tensor(t);
  key.add(&algo, sizeof algo);
  return cached_problem(key.h, [&](trace::ProblemDesc& d) {
    d.op = uint16_t(ProblemOp::kCtcLoss);
    d.n_tensors = 1;
    problem_tensor(d.tensors[0], trace::TensorRole::kProbs, *t);
    d.n_params = 1;
    d.params[0] = algo;
    return true;
  });
}

ProblemRef legacy_st_problem(ProblemOp op, const void* st, const void* x, const void* y) {
  DescEntry* e = desc_find(st);
  if (e == nullptr || e->kind != kLegacySpatialTransformer) return ProblemRef{};
  const TensorState* tx = legacy_tensor(x);
  const TensorState* ty = legacy_tensor(y);
  RawKey key;
  key.add(&op, sizeof op);
  key.add(&e->u.st, sizeof e->u.st);
  key.add_tensor(tx);
  key.add_tensor(ty);
  return cached_problem(key.h, [&](trace::ProblemDesc& d) {
    const SpatialTfState& s = e->u.st;
    int n = s.nbdims <= 5 ? s.nbdims : 5;
    d.op = uint16_t(op);
    if (tx) problem_tensor(d.tensors[d.n_tensors++], trace::TensorRole::kX, *tx);
    if (ty) problem_tensor(d.tensors[d.n_tensors++], trace::TensorRole::kY, *ty);
    d.n_params = 8;
    d.params[0] = n;
    for (int i = 0; i < n; ++i) d.params[1 + i] = s.dims[i];
    d.params[6] = s.dtype;
    d.params[7] = s.sampler;
    return true;
  });
}

trace::AlgoResultsRecord* begin_algo_results(int n, uint32_t* size) {
  static uint32_t next_id;
  if (n > trace::kMaxAlgoResults) n = trace::kMaxAlgoResults;
  *size = uint32_t(sizeof(trace::AlgoResultsRecord) + uint32_t(n) * sizeof(trace::AlgoResult));
  ThreadState& t = t_state;
  char* p = t.chunk != nullptr ? reserve_kept(t, *size) : nullptr;
  if (p == nullptr) return nullptr;
  auto* r = reinterpret_cast<trace::AlgoResultsRecord*>(p);
  r->h = trace::make_header(trace::RecordType::kAlgoResults, *size);
  r->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
  r->n = uint32_t(n);
  return r;
}

uint32_t algo_results_raw(const int* algo, const int* status, const float* time, const size_t* memory, const int* det,
                          const int* math, int n, int stride) {
  auto at = [stride](const auto* p, int i) {
    return *reinterpret_cast<const decltype(p)>(reinterpret_cast<const char*>(p) + i * stride);
  };
  uint32_t size = 0;
  trace::AlgoResultsRecord* r = begin_algo_results(n, &size);
  if (r == nullptr) return 0;
  for (uint32_t i = 0; i < r->n; ++i) {
    int k = int(i);
    r->results[i] = trace::AlgoResult{at(algo, k), at(status, k), at(time, k), at(det, k), at(math, k), 0,
                                      uint64_t(at(memory, k))};
  }
  uint32_t id = r->id;
  commit_kept(t_state, size);
  return id;
}

uint32_t min_alignment(const void* const* ptrs, int n) {
  uint32_t best = 256;
  for (int i = 0; i < n; ++i) {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptrs[i]);
    if (p == 0) continue;
    uint32_t a = 1;
    while (a < 256 && (p & (a * 2 - 1)) == 0) a *= 2;
    if (a < best) best = a;
  }
  return best;
}

}  // namespace cuprobe::shim
