// What each cuDNN call records: one Capture<> specialization per function of cudnn_hooks.h
// that needs more than the common fields. Descriptor calls (quiet) update the mirror and write
// an event only when they fail or matter (an operation graph or plan finalized, heuristics
// results); executions, algorithm queries and workspace queries are always events, naming
// their problem by its id (field `problem`, a ProblemRecord of the trace).
#pragma once

#include <cudnn.h>

#include "capture_cudnn_detail.h"
#include "cudnn_mirror.h"
#include "hook.h"

namespace cuprobe::shim {

// Executions of a backend plan the flight recorder keeps (docs/flight-recorder.md): enough for a
// benchmark search's warm-up and timed runs of a candidate and the winner's first runs after it.
inline constexpr uint32_t kFreshPlanExecutions = 16;

template <>
struct LibraryTraits<trace::Library::kCudnn> {
  static constexpr cudnnStatus_t kMissing = CUDNN_STATUS_NOT_INITIALIZED;
  static constexpr cudnnStatus_t kProbe = CUDNN_STATUS_NOT_SUPPORTED;  // FaultProbe's "as if it failed"
  static bool ok(cudnnStatus_t r) { return r == CUDNN_STATUS_SUCCESS; }
  static int device(ThreadState& t) { return current_device(t); }
  // The first cuDNN event written also records cuDNN's version.
  static void on_event() { note_cudnn_library(); }
};

// Device and stream of the handle an event ran on.
inline void on_handle(CallWriter& w, const void* handle) {
  int device = -1;
  const void* stream = nullptr;
  if (handle_lookup(handle, &device, &stream)) {
    w.device(device);
    w.stream(stream);
  }
}

inline uint32_t desc_id(const void* desc) {
  DescEntry* e = desc_find(desc);
  return e ? e->id : 0;
}

// ---- handles -------------------------------------------------------------------------------

template <>
struct Capture<ApiId::cudnnCreate> {
  static constexpr const char* kFields = "handle:p";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t* h) {
    int device = current_device(w.thread());
    if (r == CUDNN_STATUS_SUCCESS && h) handle_created(*h, device);
    w.p(r == CUDNN_STATUS_SUCCESS && h ? static_cast<const void*>(*h) : nullptr);
    w.device(device);
  }
};

template <>
struct Capture<ApiId::cudnnDestroy> {
  static constexpr const char* kFields = "handle:p";
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h) {
    on_handle(w, h);
    handle_destroyed(h);
    w.p(h);
  }
};

template <>
struct Capture<ApiId::cudnnSetStream> {
  static constexpr const char* kFields = "handle:p";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, cudaStream_t s) {
    if (r == CUDNN_STATUS_SUCCESS) handle_set_stream(h, s);
    on_handle(w, h);
    w.p(h);
  }
};

// ---- backend API ---------------------------------------------------------------------------

template <>
struct Capture<ApiId::cudnnBackendCreateDescriptor> {
  static constexpr const char* kFields = "desc:u,kind:i";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* d) {
    DescEntry* e = (r == CUDNN_STATUS_SUCCESS && d) ? desc_create(*d, uint16_t(type)) : nullptr;
    w.u(e ? e->id : 0);
    w.i(type);
  }
};

template <>
struct Capture<ApiId::cudnnBackendDestroyDescriptor> {
  static constexpr const char* kFields = "desc:u,kind:i";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnBackendDescriptor_t d) {
    DescEntry* e = desc_find(d);
    w.u(e ? e->id : 0);
    w.i(e ? e->kind : -1);
    if (r == CUDNN_STATUS_SUCCESS) desc_destroy(d);
  }
};

// A configuration plan pinning filled takes the shim's own descriptors with it; so does a plan the
// search budget keeps a deferred search for.
template <>
struct Steer<ApiId::cudnnBackendDestroyDescriptor> {
  static constexpr bool kOn = true;
  static bool before(ThreadState&, cudnnStatus_t* r, FaultHit*, cudnnBackendDescriptor_t d) {
    pin_destroy_before(d);
    if (g_budget_on && budget_destroy_before(d)) {
      *r = CUDNN_STATUS_SUCCESS;  // kept by the search budget: destroyed when its deferred search is done with it
      return true;
    }
    return false;
  }
  static void after(ThreadState&, cudnnStatus_t r, cudnnBackendDescriptor_t) { pin_destroy_after(int(r)); }
};

template <>
struct Capture<ApiId::cudnnBackendSetAttribute> {
  static constexpr const char* kFields = "desc:u,kind:i,attr:i,count:i";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void* elements) {
    DescEntry* e = desc_find(d);
    if (e && r == CUDNN_STATUS_SUCCESS) mirror_set_attribute(*e, name, type, count, elements);
    w.u(e ? e->id : 0);
    w.i(e ? e->kind : -1);
    w.i(name);
    w.i(count);
  }
};

template <>
struct Capture<ApiId::cudnnBackendGetAttribute> {
  static constexpr const char* kFields = "desc:u,kind:i,attr:i,count:i,problem:q";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t, int64_t, int64_t* count, void* elements) {
    DescEntry* e = desc_find(d);
    int64_t n = (r == CUDNN_STATUS_SUCCESS && count) ? *count : -1;
    if (e && r == CUDNN_STATUS_SUCCESS && mirror_get_attribute(*e, name, n, elements)) w.emit();
    ProblemRef p = e && e->kind == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR ? graph_problem_of(graph_of_heur(e)) : ProblemRef{};
    w.u(e ? e->id : 0);
    w.i(e ? e->kind : -1);
    w.i(name);
    w.i(n);
    w.u(p.id);
  }
};

template <>
struct Capture<ApiId::cudnnBackendFinalize> {
  static constexpr const char* kFields =
      "desc:u,kind:i,problem:q,engine:i,knobs:k,workspace:u,notes:x,behavior:x,align:u";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnBackendDescriptor_t d) {
    DescEntry* e = desc_find(d);
    if (e && mirror_finalize(*e, d, r)) w.emit();
    ProblemRef p;
    int64_t engine = -1;
    uint32_t knobs = 0, notes = 0, behavior = 0;
    uint64_t workspace = 0;
    int64_t align = 0;
    if (e && e->kind == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
      const PlanState& plan = e->u.plan;
      p = ProblemRef{plan.problem_id, plan.problem_hash};
      engine = plan.engine;
      knobs = plan.knobs_id;
      workspace = plan.workspace;
      notes = plan.notes;
      behavior = plan.behavior;
      align = plan.min_alignment;
      on_handle(w, plan.handle);
    } else if (e && e->kind == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) {
      p = ProblemRef{e->u.graph.problem_id, e->u.graph.problem_hash};
      align = e->u.graph.min_alignment;
    }
    w.u(e ? e->id : 0);
    w.i(e ? e->kind : -1);
    w.u(p.id);
    w.i(engine);
    w.u(knobs);
    w.u(workspace);
    w.u(notes);
    w.u(behavior);
    w.u(uint64_t(align));
  }
};

// A finalize's capture mirrors descriptor state, so fault rules learn about it here: the
// problem and engine of a plan (through its engine configuration), a configuration or an engine.
template <>
struct FaultProbe<ApiId::cudnnBackendFinalize> {
  static constexpr bool kFromCapture = false;
  static void describe(ThreadState&, FaultCtx& c, cudnnBackendDescriptor_t d) {
    DescEntry* e = desc_find(d);
    if (e == nullptr) return;
    const ProblemLink* link = nullptr;
    if (e->kind == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
      if (EngineCfgState* cfg = plan_cfg(e->u.plan)) {
        link = &cfg->problem;
        c.engine = cfg->engine_index;
      }
      int device = -1;
      const void* stream = nullptr;
      if (handle_lookup(e->u.plan.handle, &device, &stream)) c.device = device;
    } else if (e->kind == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) {
      link = &e->u.cfg.problem;
      c.engine = e->u.cfg.engine_index;
    } else if (e->kind == CUDNN_BACKEND_ENGINE_DESCRIPTOR) {
      link = &e->u.engine.problem;
      c.engine = e->u.engine.global_index;
    }
    if (link != nullptr) {
      c.problem_id = link->id;
      c.problem_hash = link->hash;
    }
  }
};

// Plan pinning: a candidate plan of a pinned problem other than the pinned one fails fast. The
// search budget: a budgeted selection's candidates after the first that built fail fast.
template <>
struct Steer<ApiId::cudnnBackendFinalize> {
  static constexpr bool kOn = true;
  static bool before(ThreadState& t, cudnnStatus_t* r, FaultHit* hit, cudnnBackendDescriptor_t d) {
    int code = 0;
    if (!pin_finalize_before(t, d, &code, hit) && !(g_budget_on && budget_finalize_before(t, d, &code, hit))) {
      return false;
    }
    *r = cudnnStatus_t(code);
    return true;
  }
  static void after(ThreadState& t, cudnnStatus_t r, cudnnBackendDescriptor_t d) {
    pin_finalize_after(t, d, int(r));
    if (g_budget_on) budget_finalize_after(t, d, int(r));
  }
};

// Plan pinning answers a pinned problem's heuristics query with the pinned configuration, or
// learns where the pinned configuration stands among cuDNN's candidates.
template <>
struct Steer<ApiId::cudnnBackendGetAttribute> {
  static constexpr bool kOn = true;
  static bool before(ThreadState& t, cudnnStatus_t* r, FaultHit* hit, cudnnBackendDescriptor_t const d,
                     cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t requested,
                     int64_t* count, void* elements) {
    if (name != CUDNN_ATTR_ENGINEHEUR_RESULTS) return false;
    if (g_budget_on) {
      budget_heuristics_query(d);  // a selection begins with its first query
      if (count != nullptr && budget_fallback_answer(d, hit)) {
        *count = 0;  // the fallback list, not needed: a ranked configuration builds
        *r = CUDNN_STATUS_SUCCESS;
        return true;
      }
    }
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || requested < 1 || count == nullptr || elements == nullptr) return false;
    if (!pin_heuristics_answer(t, d, static_cast<void* const*>(elements), hit)) return false;
    *count = 1;
    *r = CUDNN_STATUS_SUCCESS;
    return true;
  }
  static void after(ThreadState& t, cudnnStatus_t r, cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t, int64_t, int64_t* count, void* elements) {
    if (r != CUDNN_STATUS_SUCCESS || name != CUDNN_ATTR_ENGINEHEUR_RESULTS || count == nullptr || elements == nullptr) return;
    DescEntry* e = desc_find(d);
    if (e && e->kind == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) {
      pin_heuristics_results(t, *e, *count, static_cast<void* const*>(elements));
    }
    if (g_budget_on) budget_heuristics_results(d, *count, static_cast<void* const*>(elements));
  }
};

template <>
struct Capture<ApiId::cudnnBackendExecute> {
  static constexpr const char* kFields = "plan:u,problem:q,engine:i,knobs:k,workspace:u,ws_ptr:p,align:u";
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnBackendDescriptor_t plan_desc,
                    cudnnBackendDescriptor_t pack_desc) {
    on_handle(w, h);
    DescEntry* plan = desc_find(plan_desc);
    DescEntry* pack = desc_find(pack_desc);
    bool is_plan = plan && plan->kind == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
    bool is_pack = pack && pack->kind == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR;
    w.u(plan ? plan->id : 0);
    w.u(is_plan ? plan->u.plan.problem_id : 0);
    w.i(is_plan ? plan->u.plan.engine : -1);
    w.u(is_plan ? plan->u.plan.knobs_id : 0);
    w.u(is_plan ? plan->u.plan.workspace : 0);
    w.p(is_pack ? pack->u.pack.workspace : nullptr);
    w.u(is_pack ? pack->u.pack.min_alignment : 0);
    // A plan's first executions are its benchmark timing and its first runs as the winner: kept.
    // An execution of a plan run many times means the thread's plan selection is over.
    if (is_plan) {
      if (__atomic_add_fetch(&plan->u.plan.executions, 1u, __ATOMIC_RELAXED) <= kFreshPlanExecutions) {
        w.keep();
      } else {
        w.close_selection();
      }
    }
  }
};

// A pinned plan that fails for real is not steered to again in this process. The search budget
// times benchmark searches by their plans' runs, and runs a deferred search's winner in place of
// the budgeted plan it replaced.
template <>
struct Steer<ApiId::cudnnBackendExecute> {
  static constexpr bool kOn = true;
  static constexpr bool kRewrites = true;
  template <typename... A>
  static bool before(ThreadState&, cudnnStatus_t*, FaultHit*, A...) {
    return false;
  }
  static void rewrite(ThreadState& t, cudnnHandle_t& h, cudnnBackendDescriptor_t& plan,
                      cudnnBackendDescriptor_t& pack) {
    if (g_budget_on) budget_execute(t, h, &plan, pack);
  }
  static void after(ThreadState& t, cudnnStatus_t r, cudnnHandle_t, cudnnBackendDescriptor_t plan,
                    cudnnBackendDescriptor_t) {
    if (g_budget_on) budget_execute_after();
    pin_execute_after(t, plan, int(r));
  }
};

// ---- legacy descriptors --------------------------------------------------------------------

template <uint16_t kKind, typename Desc>
struct LegacyCreate {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, Desc* d) {
    if (r == CUDNN_STATUS_SUCCESS && d) desc_create(*d, kKind);
  }
};
template <typename Desc>
struct LegacyDestroy {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, Desc d) {
    if (r == CUDNN_STATUS_SUCCESS) desc_destroy(d);
  }
};

template <>
struct Capture<ApiId::cudnnCreateTensorDescriptor> : LegacyCreate<kLegacyTensor, cudnnTensorDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateFilterDescriptor> : LegacyCreate<kLegacyFilter, cudnnFilterDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateConvolutionDescriptor>
    : LegacyCreate<kLegacyConvolution, cudnnConvolutionDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateActivationDescriptor>
    : LegacyCreate<kLegacyActivation, cudnnActivationDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreatePoolingDescriptor> : LegacyCreate<kLegacyPooling, cudnnPoolingDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateDropoutDescriptor> : LegacyCreate<kLegacyDropout, cudnnDropoutDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateRNNDescriptor> : LegacyCreate<kLegacyRnn, cudnnRNNDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateRNNDataDescriptor> : LegacyCreate<kLegacyRnnData, cudnnRNNDataDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateCTCLossDescriptor> : LegacyCreate<kLegacyCtcLoss, cudnnCTCLossDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnCreateSpatialTransformerDescriptor>
    : LegacyCreate<kLegacySpatialTransformer, cudnnSpatialTransformerDescriptor_t> {};

template <>
struct Capture<ApiId::cudnnDestroyTensorDescriptor> : LegacyDestroy<cudnnTensorDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyFilterDescriptor> : LegacyDestroy<cudnnFilterDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyConvolutionDescriptor> : LegacyDestroy<cudnnConvolutionDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyActivationDescriptor> : LegacyDestroy<cudnnActivationDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyPoolingDescriptor> : LegacyDestroy<cudnnPoolingDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyDropoutDescriptor> : LegacyDestroy<cudnnDropoutDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyRNNDescriptor> : LegacyDestroy<cudnnRNNDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyRNNDataDescriptor> : LegacyDestroy<cudnnRNNDataDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroyCTCLossDescriptor> : LegacyDestroy<cudnnCTCLossDescriptor_t> {};
template <>
struct Capture<ApiId::cudnnDestroySpatialTransformerDescriptor> : LegacyDestroy<cudnnSpatialTransformerDescriptor_t> {};

// The entry of a legacy descriptor of the expected kind, created on the spot when the
// application set up a descriptor created before the shim saw it.
inline DescEntry* legacy_entry(const void* d, uint16_t kind) {
  DescEntry* e = desc_find(d);
  if (e == nullptr) e = desc_create(d, kind);
  return (e && e->kind == kind) ? e : nullptr;
}

template <>
struct Capture<ApiId::cudnnSetTensorNdDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int n,
                    const int* dims, const int* strides) {
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_tensor(d, dtype, n, dims, strides, -1);
  }
};

template <>
struct Capture<ApiId::cudnnSetTensorNdDescriptorEx> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                    cudnnDataType_t dtype, int n, const int* dims) {
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_tensor(d, dtype, n, dims, nullptr, format);
  }
};

template <>
struct Capture<ApiId::cudnnSetTensor4dDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                    cudnnDataType_t dtype, int n, int c, int h, int wd) {
    const int dims[4] = {n, c, h, wd};
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_tensor(d, dtype, 4, dims, nullptr, format);
  }
};

template <>
struct Capture<ApiId::cudnnSetTensor4dDescriptorEx> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int n, int c,
                    int h, int wd, int ns, int cs, int hs, int ws) {
    const int dims[4] = {n, c, h, wd};
    const int strides[4] = {ns, cs, hs, ws};
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_tensor(d, dtype, 4, dims, strides, -1);
  }
};

template <>
struct Capture<ApiId::cudnnSetFilterNdDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                    cudnnTensorFormat_t format, int n, const int* dims) {
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_filter(d, dtype, format, n, dims);
  }
};

template <>
struct Capture<ApiId::cudnnSetFilter4dDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                    cudnnTensorFormat_t format, int k, int c, int h, int wd) {
    const int dims[4] = {k, c, h, wd};
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_filter(d, dtype, format, 4, dims);
  }
};

template <>
struct Capture<ApiId::cudnnSetConvolutionNdDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnConvolutionDescriptor_t d, int n, const int* pad,
                    const int* stride, const int* dilation, cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_conv(d, n, pad, stride, dilation, mode, compute);
  }
};

template <>
struct Capture<ApiId::cudnnSetConvolution2dDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnConvolutionDescriptor_t d, int ph, int pw, int u, int v,
                    int dh, int dw, cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
    const int pad[2] = {ph, pw}, stride[2] = {u, v}, dilation[2] = {dh, dw};
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_conv(d, 2, pad, stride, dilation, mode, compute);
  }
};

template <>
struct Capture<ApiId::cudnnSetConvolutionGroupCount> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnConvolutionDescriptor_t d, int groups) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyConvolution) : nullptr) {
      e->u.conv.groups = groups;
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetConvolutionMathType> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyConvolution) : nullptr) {
      e->u.conv.math = int8_t(math);
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetActivationDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                    cudnnNanPropagation_t, double coef) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyActivation) : nullptr) {
      e->u.activation.mode = mode;
      e->u.activation.coef = coef;
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetPooling2dDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                    cudnnNanPropagation_t, int wh, int ww, int ph, int pw, int sh, int sw) {
    const int window[2] = {wh, ww}, pad[2] = {ph, pw}, stride[2] = {sh, sw};
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_pooling(d, mode, 2, window, pad, stride);
  }
};

template <>
struct Capture<ApiId::cudnnSetPoolingNdDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnPoolingDescriptor_t d, const cudnnPoolingMode_t mode,
                    const cudnnNanPropagation_t, int n, const int* window, const int* pad, const int* stride) {
    if (r == CUDNN_STATUS_SUCCESS) set_legacy_pooling(d, mode, n, window, pad, stride);
  }
};

template <>
struct Capture<ApiId::cudnnSetDropoutDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnDropoutDescriptor_t d, cudnnHandle_t, float p, void*, size_t,
                    unsigned long long) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyDropout) : nullptr) e->u.dropout = p;
  }
};

template <>
struct Capture<ApiId::cudnnRestoreDropoutDescriptor> : Capture<ApiId::cudnnSetDropoutDescriptor> {};

template <>
struct Capture<ApiId::cudnnSetRNNDescriptor_v8> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnRNNDescriptor_t d, cudnnRNNAlgo_t algo, cudnnRNNMode_t cell,
                    cudnnRNNBiasMode_t bias, cudnnDirectionMode_t dir, cudnnRNNInputMode_t input, cudnnDataType_t dtype,
                    cudnnDataType_t prec, cudnnMathType_t math, int32_t input_size, int32_t hidden, int32_t proj,
                    int32_t layers, cudnnDropoutDescriptor_t, uint32_t) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyRnn) : nullptr) {
      e->u.rnn = RnnState{algo, cell, bias, dir, input, dtype, prec, math, input_size, hidden, proj, layers};
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetRNNDataDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnRNNDataDescriptor_t d, cudnnDataType_t dtype,
                    cudnnRNNDataLayout_t layout, int max_seq, int batch, int vector, const int*, void*) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyRnnData) : nullptr) {
      e->u.rnn_data = RnnDataState{dtype, layout, max_seq, batch, vector};
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetCTCLossDescriptorEx> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnCTCLossDescriptor_t d, cudnnDataType_t compute,
                    cudnnLossNormalizationMode_t norm, cudnnNanPropagation_t) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyCtcLoss) : nullptr) {
      e->u.ctc = CtcState{compute, norm, -1, 0};
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetCTCLossDescriptor_v9> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnCTCLossDescriptor_t d, cudnnDataType_t compute,
                    cudnnLossNormalizationMode_t norm, cudnnCTCGradMode_t grad, int max_label) {
    if (DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacyCtcLoss) : nullptr) {
      e->u.ctc = CtcState{compute, norm, grad, max_label};
    }
  }
};

template <>
struct Capture<ApiId::cudnnSetSpatialTransformerNdDescriptor> {
  static constexpr const char* kFields = "";
  static void after(CallWriter&, cudnnStatus_t r, cudnnSpatialTransformerDescriptor_t d, cudnnSamplerType_t sampler,
                    cudnnDataType_t dtype, const int n, const int* dims) {
    DescEntry* e = r == CUDNN_STATUS_SUCCESS ? legacy_entry(d, kLegacySpatialTransformer) : nullptr;
    if (e == nullptr) return;
    e->u.st.sampler = sampler;
    e->u.st.dtype = dtype;
    e->u.st.nbdims = uint8_t(n > 5 ? 5 : (n < 0 ? 0 : n));
    for (int i = 0; i < e->u.st.nbdims; ++i) e->u.st.dims[i] = dims ? dims[i] : 0;
  }
};

// ---- legacy algorithm queries and searches ---------------------------------------------------

inline constexpr const char* kAlgoFields = "problem:q,returned:i,best:i,results:r,math:i";

template <typename Perf>
void algo_results(CallWriter& w, cudnnStatus_t r, ProblemRef p, const int* returned, const Perf* perf, int math) {
  int n = (r == CUDNN_STATUS_SUCCESS && returned) ? *returned : 0;
  w.u(p.id);
  w.i(n);
  w.i(n > 0 && perf ? int(perf[0].algo) : -1);
  w.u(n > 0 ? algo_results(perf, n) : 0);
  w.i(math);
}

template <>
struct Capture<ApiId::cudnnGetConvolutionForwardAlgorithm_v7> {
  static constexpr const char* kFields = kAlgoFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                    const cudnnFilterDescriptor_t wd, const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t y,
                    const int, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
    on_handle(w, h);
    algo_results(w, r, legacy_conv_problem(ProblemOp::kConvFwd, x, wd, c, y), returned, perf, legacy_math_type(c));
  }
};

template <>
struct Capture<ApiId::cudnnGetConvolutionBackwardDataAlgorithm_v7> {
  static constexpr const char* kFields = kAlgoFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnFilterDescriptor_t wd,
                    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t dx,
                    const int, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
    on_handle(w, h);
    algo_results(w, r, legacy_conv_problem(ProblemOp::kConvDgrad, dy, wd, c, dx), returned, perf, legacy_math_type(c));
  }
};

template <>
struct Capture<ApiId::cudnnGetConvolutionBackwardFilterAlgorithm_v7> {
  static constexpr const char* kFields = kAlgoFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t c, const cudnnFilterDescriptor_t dw,
                    const int, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
    on_handle(w, h);
    algo_results(w, r, legacy_conv_problem(ProblemOp::kConvWgrad, x, dy, c, dw), returned, perf, legacy_math_type(c));
  }
};

template <>
struct Capture<ApiId::cudnnFindConvolutionForwardAlgorithm> : Capture<ApiId::cudnnGetConvolutionForwardAlgorithm_v7> {};
template <>
struct Capture<ApiId::cudnnFindConvolutionBackwardDataAlgorithm>
    : Capture<ApiId::cudnnGetConvolutionBackwardDataAlgorithm_v7> {};
template <>
struct Capture<ApiId::cudnnFindConvolutionBackwardFilterAlgorithm>
    : Capture<ApiId::cudnnGetConvolutionBackwardFilterAlgorithm_v7> {};

inline constexpr const char* kFindExFields = "problem:q,returned:i,best:i,results:r,math:i,workspace:u,ws_ptr:p";

template <>
struct Capture<ApiId::cudnnFindConvolutionForwardAlgorithmEx> {
  static constexpr const char* kFields = kFindExFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t x, const void*,
                    const cudnnFilterDescriptor_t wd, const void*, const cudnnConvolutionDescriptor_t c,
                    const cudnnTensorDescriptor_t y, void*, const int, int* returned,
                    cudnnConvolutionFwdAlgoPerf_t* perf, void* ws, size_t ws_size) {
    on_handle(w, h);
    algo_results(w, r, legacy_conv_problem(ProblemOp::kConvFwd, x, wd, c, y), returned, perf, legacy_math_type(c));
    w.u(ws_size);
    w.p(ws);
  }
};

template <>
struct Capture<ApiId::cudnnFindConvolutionBackwardDataAlgorithmEx> {
  static constexpr const char* kFields = kFindExFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnFilterDescriptor_t wd, const void*,
                    const cudnnTensorDescriptor_t dy, const void*, const cudnnConvolutionDescriptor_t c,
                    const cudnnTensorDescriptor_t dx, void*, const int, int* returned,
                    cudnnConvolutionBwdDataAlgoPerf_t* perf, void* ws, size_t ws_size) {
    on_handle(w, h);
    algo_results(w, r, legacy_conv_problem(ProblemOp::kConvDgrad, dy, wd, c, dx), returned, perf, legacy_math_type(c));
    w.u(ws_size);
    w.p(ws);
  }
};

template <>
struct Capture<ApiId::cudnnFindConvolutionBackwardFilterAlgorithmEx> {
  static constexpr const char* kFields = kFindExFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t x, const void*,
                    const cudnnTensorDescriptor_t dy, const void*, const cudnnConvolutionDescriptor_t c,
                    const cudnnFilterDescriptor_t dw, void*, const int, int* returned,
                    cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* ws, size_t ws_size) {
    on_handle(w, h);
    algo_results(w, r, legacy_conv_problem(ProblemOp::kConvWgrad, x, dy, c, dw), returned, perf, legacy_math_type(c));
    w.u(ws_size);
    w.p(ws);
  }
};

// ---- plan pinning of legacy searches and queries ----------------------------------------------

// A cudnnFind* call for a pinned problem is answered with the pinned algorithm alone, its
// workspace asked of cuDNN (cudnnGet*WorkspaceSize, the query PyTorch itself makes), instead of
// timing every algorithm. When cuDNN refuses that query the search runs as usual.
template <ProblemOp kOp, ApiId kWsQuery, ApiId kGet, typename Perf, typename In0, typename In1, typename Out>
bool pin_find(ThreadState& t, cudnnStatus_t* r, FaultHit* hit, cudnnHandle_t h, In0 in0, In1 in1,
              cudnnConvolutionDescriptor_t c, Out out, int requested, int* returned, Perf* perf) {
  if (requested < 1 || returned == nullptr || perf == nullptr) return false;
  ProblemRef p = kOp == ProblemOp::kConvDgrad ? legacy_conv_problem(kOp, in1, in0, c, out)
                                              : legacy_conv_problem(kOp, in0, in1, c, out);
  LegacyPin pin;
  if (!pin_legacy(t, p.id, p.hash, h, &pin)) {
    // The search budget answers with cuDNN's heuristics (cudnnGet*_v7, the same arguments) instead.
    if (!g_budget_on || !budget_legacy_find(p.hash)) return false;
    using GetFn = cudnnStatus_t (*)(cudnnHandle_t, In0, In1, cudnnConvolutionDescriptor_t, Out, int, int*, Perf*);
    auto get = reinterpret_cast<GetFn>(real_function(kGet));
    if (get == nullptr || get(h, in0, in1, c, out, requested, returned, perf) != CUDNN_STATUS_SUCCESS ||
        *returned < 1) {
      return false;
    }
    *r = CUDNN_STATUS_SUCCESS;
    budget_legacy_answered(t, p.id, p.hash, int64_t(perf[0].algo), hit);
    return true;
  }
  using WsFn = cudnnStatus_t (*)(cudnnHandle_t, In0, In1, cudnnConvolutionDescriptor_t, Out, decltype(Perf::algo),
                                 size_t*);
  auto ws_query = reinterpret_cast<WsFn>(real_function(kWsQuery));
  size_t ws = 0;
  if (ws_query == nullptr || ws_query(h, in0, in1, c, out, decltype(Perf::algo)(pin.algo), &ws) != CUDNN_STATUS_SUCCESS) {
    pin_legacy_failed(t, p.id, p.hash);
    return false;
  }
  memset(&perf[0], 0, sizeof perf[0]);
  perf[0].algo = decltype(Perf::algo)(pin.algo);
  perf[0].status = CUDNN_STATUS_SUCCESS;
  perf[0].time = pin.time_ms;
  perf[0].memory = ws;
  perf[0].determinism = pin.determinism == 1 ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
  perf[0].mathType = pin.math >= 0 ? cudnnMathType_t(pin.math) : CUDNN_DEFAULT_MATH;
  *returned = 1;
  *r = CUDNN_STATUS_SUCCESS;
  pin_mark_call(hit);
  pin_legacy_done(t, p.id, p.hash, true);
  return true;
}

// A cudnnGet*_v7 answer for a pinned problem gets the pinned algorithm (and math type) first.
template <ProblemOp kOp, typename Perf, typename In0, typename In1, typename Out>
void pin_get(ThreadState& t, cudnnStatus_t r, cudnnHandle_t h, In0 in0, In1 in1, cudnnConvolutionDescriptor_t c, Out out,
             int* returned, Perf* perf) {
  if (r != CUDNN_STATUS_SUCCESS || returned == nullptr || perf == nullptr) return;
  ProblemRef p = kOp == ProblemOp::kConvDgrad ? legacy_conv_problem(kOp, in1, in0, c, out)
                                              : legacy_conv_problem(kOp, in0, in1, c, out);
  LegacyPin pin;
  if (!pin_legacy(t, p.id, p.hash, h, &pin)) return;
  int at = -1;
  for (int i = 0; i < *returned && at < 0; ++i) {
    if (int(perf[i].algo) == pin.algo && (pin.math < 0 || int(perf[i].mathType) == pin.math) &&
        perf[i].status == CUDNN_STATUS_SUCCESS) {
      at = i;
    }
  }
  if (at > 0) {
    Perf chosen = perf[at];
    memmove(&perf[1], &perf[0], sizeof(Perf) * size_t(at));
    perf[0] = chosen;
  }
  pin_legacy_done(t, p.id, p.hash, at >= 0);
}

// What every legacy Find's steer does once the real search ran: the search budget counts it.
struct LegacyFindSteer {
  static constexpr bool kOn = true;
  template <typename... A>
  static void after(ThreadState&, cudnnStatus_t, A...) {
    if (g_budget_on) budget_legacy_searched();
  }
};
#define CUPROBE_PIN_FIND(api, op, ws_api, get_api, Perf, In0, In1, Out)                                \
  template <>                                                                                          \
  struct Steer<ApiId::api> : LegacyFindSteer {                                                         \
    static bool before(ThreadState& t, cudnnStatus_t* r, FaultHit* hit, cudnnHandle_t h, In0 a, In1 b, \
                       cudnnConvolutionDescriptor_t c, Out o, int req, int* ret, Perf* perf) {         \
      return pin_find<op, ApiId::ws_api, ApiId::get_api>(t, r, hit, h, a, b, c, o, req, ret, perf);    \
    }                                                                                                  \
  };
#define CUPROBE_PIN_FIND_EX(api, op, ws_api, get_api, Perf, In0, In1, Out)                                          \
  template <>                                                                                                       \
  struct Steer<ApiId::api> : LegacyFindSteer {                                                                      \
    static bool before(ThreadState& t, cudnnStatus_t* r, FaultHit* hit, cudnnHandle_t h, In0 a, const void*, In1 b, \
                       const void*, cudnnConvolutionDescriptor_t c, Out o, void*, int req, int* ret, Perf* perf,    \
                       void*, size_t) {                                                                             \
      return pin_find<op, ApiId::ws_api, ApiId::get_api>(t, r, hit, h, a, b, c, o, req, ret, perf);                 \
    }                                                                                                               \
  };
#define CUPROBE_PIN_GET(api, op, Perf, In0, In1, Out)                                                            \
  template <>                                                                                                 \
  struct Steer<ApiId::api> {                                                                                  \
    static constexpr bool kOn = true;                                                                         \
    template <typename... A>                                                                                  \
    static bool before(ThreadState&, cudnnStatus_t*, FaultHit*, A...) {                                       \
      return false;                                                                                           \
    }                                                                                                         \
    static void after(ThreadState& t, cudnnStatus_t r, cudnnHandle_t h, In0 a, In1 b,                         \
                      cudnnConvolutionDescriptor_t c, Out o, int, int* ret, Perf* perf) {                      \
      pin_get<op>(t, r, h, a, b, c, o, ret, perf);                                                            \
    }                                                                                                         \
  };

// Forward: (x, w, y); backward data: (w, dy, dx); backward filter: (x, dy, dw), as the vendor
// signatures order them; legacy_conv_problem takes backward data's as (dy, w).
CUPROBE_PIN_FIND(cudnnFindConvolutionForwardAlgorithm, ProblemOp::kConvFwd, cudnnGetConvolutionForwardWorkspaceSize,
                 cudnnGetConvolutionForwardAlgorithm_v7, cudnnConvolutionFwdAlgoPerf_t, cudnnTensorDescriptor_t,
                 cudnnFilterDescriptor_t, cudnnTensorDescriptor_t)
CUPROBE_PIN_FIND_EX(cudnnFindConvolutionForwardAlgorithmEx, ProblemOp::kConvFwd,
                    cudnnGetConvolutionForwardWorkspaceSize, cudnnGetConvolutionForwardAlgorithm_v7,
                    cudnnConvolutionFwdAlgoPerf_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                    cudnnTensorDescriptor_t)
CUPROBE_PIN_GET(cudnnGetConvolutionForwardAlgorithm_v7, ProblemOp::kConvFwd, cudnnConvolutionFwdAlgoPerf_t,
                cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t)
CUPROBE_PIN_FIND(cudnnFindConvolutionBackwardDataAlgorithm, ProblemOp::kConvDgrad,
                 cudnnGetConvolutionBackwardDataWorkspaceSize, cudnnGetConvolutionBackwardDataAlgorithm_v7,
                 cudnnConvolutionBwdDataAlgoPerf_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                 cudnnTensorDescriptor_t)
CUPROBE_PIN_FIND_EX(cudnnFindConvolutionBackwardDataAlgorithmEx, ProblemOp::kConvDgrad,
                    cudnnGetConvolutionBackwardDataWorkspaceSize, cudnnGetConvolutionBackwardDataAlgorithm_v7,
                    cudnnConvolutionBwdDataAlgoPerf_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                    cudnnTensorDescriptor_t)
CUPROBE_PIN_GET(cudnnGetConvolutionBackwardDataAlgorithm_v7, ProblemOp::kConvDgrad, cudnnConvolutionBwdDataAlgoPerf_t,
                cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t)
CUPROBE_PIN_FIND(cudnnFindConvolutionBackwardFilterAlgorithm, ProblemOp::kConvWgrad,
                 cudnnGetConvolutionBackwardFilterWorkspaceSize, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
                 cudnnConvolutionBwdFilterAlgoPerf_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                 cudnnFilterDescriptor_t)
CUPROBE_PIN_FIND_EX(cudnnFindConvolutionBackwardFilterAlgorithmEx, ProblemOp::kConvWgrad,
                    cudnnGetConvolutionBackwardFilterWorkspaceSize, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
                    cudnnConvolutionBwdFilterAlgoPerf_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                    cudnnFilterDescriptor_t)
CUPROBE_PIN_GET(cudnnGetConvolutionBackwardFilterAlgorithm_v7, ProblemOp::kConvWgrad,
                cudnnConvolutionBwdFilterAlgoPerf_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                cudnnFilterDescriptor_t)
#undef CUPROBE_PIN_FIND
#undef CUPROBE_PIN_FIND_EX
#undef CUPROBE_PIN_GET

// ---- workspace queries -----------------------------------------------------------------------

inline constexpr const char* kWorkspaceQueryFields = "problem:q,algo:i,size:u";

inline void workspace_answer(CallWriter& w, cudnnStatus_t r, ProblemRef p, int algo, const size_t* size) {
  w.u(p.id);
  w.i(algo);
  w.u(r == CUDNN_STATUS_SUCCESS && size ? *size : 0);
}

template <>
struct Capture<ApiId::cudnnGetConvolutionForwardWorkspaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                    const cudnnFilterDescriptor_t wd, const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t y,
                    cudnnConvolutionFwdAlgo_t algo, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_conv_problem(ProblemOp::kConvFwd, x, wd, c, y), algo, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetConvolutionBackwardDataWorkspaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnFilterDescriptor_t wd,
                    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t dx,
                    cudnnConvolutionBwdDataAlgo_t algo, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_conv_problem(ProblemOp::kConvDgrad, dy, wd, c, dx), algo, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetConvolutionBackwardFilterWorkspaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t c, const cudnnFilterDescriptor_t dw,
                    cudnnConvolutionBwdFilterAlgo_t algo, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_conv_problem(ProblemOp::kConvWgrad, x, dy, c, dw), algo, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                    const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
                    const cudnnTensorDescriptor_t, const cudnnActivationDescriptor_t, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_bn_problem(ProblemOp::kBnFwdTrain, mode, ops, x), -1, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetBatchNormalizationBackwardExWorkspaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                    const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
                    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
                    const cudnnActivationDescriptor_t, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_bn_problem(ProblemOp::kBnBwd, mode, ops, x), -1, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetBatchNormalizationTrainingExReserveSpaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                    const cudnnActivationDescriptor_t, const cudnnTensorDescriptor_t x, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_bn_problem(ProblemOp::kBnFwdTrain, mode, ops, x), -1, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetRNNTempSpaceSizes> {
  static constexpr const char* kFields = "problem:q,size:u,reserve:u";
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, cudnnRNNDescriptor_t rnn, cudnnForwardMode_t mode,
                    cudnnRNNDataDescriptor_t x, size_t* ws, size_t* reserve) {
    on_handle(w, h);
    ProblemRef p = legacy_rnn_problem(ProblemOp::kRnn, rnn, x, mode);
    bool ok = r == CUDNN_STATUS_SUCCESS;
    w.u(p.id);
    w.u(ok && ws ? *ws : 0);
    w.u(ok && reserve ? *reserve : 0);
  }
};

template <>
struct Capture<ApiId::cudnnGetCTCLossWorkspaceSize> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, const cudnnTensorDescriptor_t probs,
                    const cudnnTensorDescriptor_t, const int*, const int*, const int*, cudnnCTCLossAlgo_t algo,
                    cudnnCTCLossDescriptor_t, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_ctc_problem(probs, algo), algo, size);
  }
};

template <>
struct Capture<ApiId::cudnnGetCTCLossWorkspaceSize_v8> {
  static constexpr const char* kFields = kWorkspaceQueryFields;
  static void after(CallWriter& w, cudnnStatus_t r, cudnnHandle_t h, cudnnCTCLossAlgo_t algo, cudnnCTCLossDescriptor_t,
                    const cudnnTensorDescriptor_t probs, const cudnnTensorDescriptor_t, size_t* size) {
    on_handle(w, h);
    workspace_answer(w, r, legacy_ctc_problem(probs, algo), algo, size);
  }
};

// ---- legacy executions -----------------------------------------------------------------------

inline constexpr const char* kConvExecFields = "problem:q,algo:i,workspace:u,ws_ptr:p,align:u,math:i";

inline void conv_exec(CallWriter& w, cudnnHandle_t h, ProblemRef p, int algo, size_t ws_size, const void* ws,
                      const void* a, const void* b, const void* out, const void* conv) {
  on_handle(w, h);
  const void* ptrs[4] = {a, b, out, ws};
  w.u(p.id);
  w.i(algo);
  w.u(ws_size);
  w.p(ws);
  w.u(min_alignment(ptrs, 4));
  w.i(legacy_math_type(conv));
}

template <>
struct Capture<ApiId::cudnnConvolutionForward> {
  static constexpr const char* kFields = kConvExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const void*, const cudnnTensorDescriptor_t xd,
                    const void* x, const cudnnFilterDescriptor_t wd, const void* wp, const cudnnConvolutionDescriptor_t c,
                    cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_size, const void*,
                    const cudnnTensorDescriptor_t yd, void* y) {
    conv_exec(w, h, legacy_conv_problem(ProblemOp::kConvFwd, xd, wd, c, yd), algo, ws_size, ws, x, wp, y, c);
  }
};

template <>
struct Capture<ApiId::cudnnConvolutionBackwardData> {
  static constexpr const char* kFields = kConvExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const void*, const cudnnFilterDescriptor_t wd,
                    const void* wp, const cudnnTensorDescriptor_t dyd, const void* dy,
                    const cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdDataAlgo_t algo, void* ws, size_t ws_size,
                    const void*, const cudnnTensorDescriptor_t dxd, void* dx) {
    conv_exec(w, h, legacy_conv_problem(ProblemOp::kConvDgrad, dyd, wd, c, dxd), algo, ws_size, ws, dy, wp, dx, c);
  }
};

template <>
struct Capture<ApiId::cudnnConvolutionBackwardFilter> {
  static constexpr const char* kFields = kConvExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const void*, const cudnnTensorDescriptor_t xd,
                    const void* x, const cudnnTensorDescriptor_t dyd, const void* dy,
                    const cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdFilterAlgo_t algo, void* ws,
                    size_t ws_size, const void*, const cudnnFilterDescriptor_t dwd, void* dw) {
    conv_exec(w, h, legacy_conv_problem(ProblemOp::kConvWgrad, xd, dyd, c, dwd), algo, ws_size, ws, x, dy, dw, c);
  }
};

template <>
struct Capture<ApiId::cudnnConvolutionBiasActivationForward> {
  static constexpr const char* kFields = kConvExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const void*, const cudnnTensorDescriptor_t xd,
                    const void* x, const cudnnFilterDescriptor_t wd, const void* wp, const cudnnConvolutionDescriptor_t c,
                    cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_size, const void*, const cudnnTensorDescriptor_t,
                    const void*, const cudnnTensorDescriptor_t, const void*, const cudnnActivationDescriptor_t,
                    const cudnnTensorDescriptor_t yd, void* y) {
    conv_exec(w, h, legacy_conv_problem(ProblemOp::kConvFwd, xd, wd, c, yd, true), algo, ws_size, ws, x, wp, y, c);
  }
};

inline constexpr const char* kExecFields = "problem:q,workspace:u,ws_ptr:p,reserve:u";

inline void exec_fields(CallWriter& w, cudnnHandle_t h, ProblemRef p, size_t ws_size, const void* ws, size_t reserve) {
  on_handle(w, h);
  w.u(p.id);
  w.u(ws_size);
  w.p(ws);
  w.u(reserve);
}

template <>
struct Capture<ApiId::cudnnBatchNormalizationForwardTrainingEx> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                    const void*, const void*, const cudnnTensorDescriptor_t xd, const void*,
                    const cudnnTensorDescriptor_t, const void*, const cudnnTensorDescriptor_t, void*,
                    const cudnnTensorDescriptor_t, const void*, const void*, double, void*, void*, double, void*, void*,
                    cudnnActivationDescriptor_t, void* ws, size_t ws_size, void*, size_t reserve) {
    exec_fields(w, h, legacy_bn_problem(ProblemOp::kBnFwdTrain, mode, ops, xd), ws_size, ws, reserve);
  }
};

template <>
struct Capture<ApiId::cudnnBatchNormalizationBackwardEx> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                    const void*, const void*, const void*, const void*, const cudnnTensorDescriptor_t xd, const void*,
                    const cudnnTensorDescriptor_t, const void*, const cudnnTensorDescriptor_t, const void*,
                    const cudnnTensorDescriptor_t, void*, const cudnnTensorDescriptor_t, void*,
                    const cudnnTensorDescriptor_t, const void*, const void*, void*, void*, double, const void*,
                    const void*, cudnnActivationDescriptor_t, void* ws, size_t ws_size, void*, size_t reserve) {
    exec_fields(w, h, legacy_bn_problem(ProblemOp::kBnBwd, mode, ops, xd), ws_size, ws, reserve);
  }
};

template <>
struct Capture<ApiId::cudnnBatchNormalizationForwardInference> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnBatchNormMode_t mode, const void*, const void*,
                    const cudnnTensorDescriptor_t xd, const void*, const cudnnTensorDescriptor_t, void*,
                    const cudnnTensorDescriptor_t, const void*, const void*, const void*, const void*, double) {
    exec_fields(w, h, legacy_bn_problem(ProblemOp::kBnFwdInfer, mode, -1, xd), 0, nullptr, 0);
  }
};

template <>
struct Capture<ApiId::cudnnRNNForward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnRNNDescriptor_t rnn, cudnnForwardMode_t mode,
                    const int32_t*, cudnnRNNDataDescriptor_t xd, const void*, cudnnRNNDataDescriptor_t, void*,
                    cudnnTensorDescriptor_t, const void*, void*, cudnnTensorDescriptor_t, const void*, void*, size_t,
                    const void*, size_t ws_size, void* ws, size_t reserve, void*) {
    exec_fields(w, h, legacy_rnn_problem(ProblemOp::kRnnFwd, rnn, xd, mode), ws_size, ws, reserve);
  }
};

template <>
struct Capture<ApiId::cudnnRNNBackwardData_v8> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnRNNDescriptor_t rnn, const int32_t*,
                    cudnnRNNDataDescriptor_t, const void*, const void*, cudnnRNNDataDescriptor_t xd, void*,
                    cudnnTensorDescriptor_t, const void*, const void*, void*, cudnnTensorDescriptor_t, const void*,
                    const void*, void*, size_t, const void*, size_t ws_size, void* ws, size_t reserve, void*) {
    exec_fields(w, h, legacy_rnn_problem(ProblemOp::kRnnBwdData, rnn, xd, -1), ws_size, ws, reserve);
  }
};

template <>
struct Capture<ApiId::cudnnRNNBackwardWeights_v8> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnRNNDescriptor_t rnn, cudnnWgradMode_t,
                    const int32_t*, cudnnRNNDataDescriptor_t xd, const void*, cudnnTensorDescriptor_t, const void*,
                    cudnnRNNDataDescriptor_t, const void*, size_t, void*, size_t ws_size, void* ws, size_t reserve,
                    void*) {
    exec_fields(w, h, legacy_rnn_problem(ProblemOp::kRnnBwdWeights, rnn, xd, -1), ws_size, ws, reserve);
  }
};

template <>
struct Capture<ApiId::cudnnPoolingForward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const cudnnPoolingDescriptor_t pool, const void*,
                    const cudnnTensorDescriptor_t xd, const void*, const void*, const cudnnTensorDescriptor_t yd, void*) {
    exec_fields(w, h, legacy_pool_problem(ProblemOp::kPoolFwd, pool, xd, yd), 0, nullptr, 0);
  }
};

template <>
struct Capture<ApiId::cudnnPoolingBackward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const cudnnPoolingDescriptor_t pool, const void*,
                    const cudnnTensorDescriptor_t yd, const void*, const cudnnTensorDescriptor_t, const void*,
                    const cudnnTensorDescriptor_t xd, const void*, const void*, const cudnnTensorDescriptor_t, void*) {
    exec_fields(w, h, legacy_pool_problem(ProblemOp::kPoolBwd, pool, xd, yd), 0, nullptr, 0);
  }
};

template <>
struct Capture<ApiId::cudnnCTCLoss> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const cudnnTensorDescriptor_t probs, const void*,
                    const int*, const int*, const int*, void*, const cudnnTensorDescriptor_t, void*,
                    cudnnCTCLossAlgo_t algo, cudnnCTCLossDescriptor_t, void* ws, size_t ws_size) {
    exec_fields(w, h, legacy_ctc_problem(probs, algo), ws_size, ws, 0);
  }
};

template <>
struct Capture<ApiId::cudnnCTCLoss_v8> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnCTCLossAlgo_t algo, cudnnCTCLossDescriptor_t,
                    const cudnnTensorDescriptor_t probs, const void*, const int*, const int*, const int*, void*,
                    const cudnnTensorDescriptor_t, void*, size_t ws_size, void* ws) {
    exec_fields(w, h, legacy_ctc_problem(probs, algo), ws_size, ws, 0);
  }
};

template <>
struct Capture<ApiId::cudnnSpatialTfSamplerForward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnSpatialTransformerDescriptor_t st, const void*,
                    const cudnnTensorDescriptor_t xd, const void*, const void*, const void*, cudnnTensorDescriptor_t yd,
                    void*) {
    exec_fields(w, h, legacy_st_problem(ProblemOp::kStSamplerFwd, st, xd, yd), 0, nullptr, 0);
  }
};

template <>
struct Capture<ApiId::cudnnSpatialTfSamplerBackward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, cudnnSpatialTransformerDescriptor_t st, const void*,
                    const cudnnTensorDescriptor_t xd, const void*, const void*, const cudnnTensorDescriptor_t, void*,
                    const void*, const cudnnTensorDescriptor_t dyd, const void*, const void*, const void*, void*) {
    exec_fields(w, h, legacy_st_problem(ProblemOp::kStSamplerBwd, st, xd, dyd), 0, nullptr, 0);
  }
};

template <>
struct Capture<ApiId::cudnnSpatialTfGridGeneratorForward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const cudnnSpatialTransformerDescriptor_t st,
                    const void*, void*) {
    exec_fields(w, h, legacy_st_problem(ProblemOp::kStGridFwd, st, nullptr, nullptr), 0, nullptr, 0);
  }
};

template <>
struct Capture<ApiId::cudnnSpatialTfGridGeneratorBackward> {
  static constexpr const char* kFields = kExecFields;
  static void after(CallWriter& w, cudnnStatus_t, cudnnHandle_t h, const cudnnSpatialTransformerDescriptor_t st,
                    const void*, void*) {
    exec_fields(w, h, legacy_st_problem(ProblemOp::kStGridBwd, st, nullptr, nullptr), 0, nullptr, 0);
  }
};

}  // namespace cuprobe::shim
