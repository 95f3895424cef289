// The shim's mirror of cuDNN state: what each live descriptor (backend or legacy) was set to,
// and each handle's device and stream. Filled from SetAttribute/Set*/Finalize/Destroy as the
// application makes those calls; read when an operation graph, plan or execution is recorded.
//
// Memory is bounded and allocated once: a fixed open-addressing index (descriptor pointer ->
// entry) and a fixed pool of entries reused through a lock-free free list, so a job that
// creates millions of short-lived descriptors (a re-search storm) uses no more than the
// largest number alive at once. Both are anonymous mappings made on the first cuDNN call;
// untouched pages cost nothing. When full, new descriptors go unmirrored (counted), and the
// events that need them record what is known. Lookups and updates take no lock; a descriptor
// is used by one thread at a time (cuDNN requires as much), so its entry needs no more.
#pragma once

#include <stdint.h>

namespace cuprobe::shim {

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxGraphOps = 12;     // operations a graph's mirror entry keeps
inline constexpr int kMaxGraphOpsAll = 96;  // operations read from a larger graph when they are set
inline constexpr int kMaxKnobs = 10;

// Backend descriptors keep cuDNN's cudnnBackendDescriptorType_t value as their kind; legacy
// descriptors get kinds from 100 up.
enum DescKind : uint16_t {
  kKindBackendLimit = 100,
  kLegacyTensor = 100,
  kLegacyFilter,
  kLegacyConvolution,
  kLegacyActivation,
  kLegacyPooling,
  kLegacyDropout,
  kLegacyRnn,
  kLegacyRnnData,
  kLegacyCtcLoss,
  kLegacySpatialTransformer,
};

struct TensorState {
  int8_t dtype;  // cudnnDataType_t, -1 unset
  uint8_t nbdims;
  uint8_t is_virtual;
  uint8_t by_value;
  int32_t format;  // legacy filter: cudnnTensorFormat_t
  int64_t uid;
  int64_t alignment;
  int64_t dims[kMaxDims];
  int64_t strides[kMaxDims];  // all zero: packed in `format` order
};

struct ConvState {
  int8_t mode;     // cudnnConvolutionMode_t
  int8_t compute;  // cudnnDataType_t
  uint8_t spatial;
  int8_t math;     // legacy cudnnMathType_t, -1 unset
  int32_t groups;  // legacy group count, 0 unset (backend: derived from the tensors)
  int32_t pre[3], post[3], stride[3], dilation[3];
};

// Any backend operation: its mode (pointwise mode, reduction operator, norm mode) and its
// tensors by role: inputs in slots 0-2 in the order the signature names them (convolution
// forward x w, backward data dy w, backward filter x dy), the output in kOpOutput.
inline constexpr int kOpOutput = 3;
// cuDNN's SDPA operations: what their optional tensors say, in OpState::mode.
enum SdpaBits : int32_t { kSdpaStats = 1, kSdpaPaged = 2, kSdpaBlockMask = 4, kSdpaRagged = 8 };

struct OpState {
  int32_t mode;
  uint8_t accumulates;  // a convolution whose beta is not 0: its output is read as well as written
  uint8_t mode_set;     // an operation's `mode` holds its own mode (set, or copied from its auxiliary descriptor)
  uint8_t norm_phase;   // a norm forward's cudnnBackendNormFwdPhase_t + 1, 0 when not set
  void* conv;  // the auxiliary descriptor: convolution, pointwise, matmul or reduction
  void* tensors[4];
};

struct GraphState {
  void* handle;  // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
  void* ops[kMaxGraphOps];
  uint8_t n_ops;
  uint32_t problem_id;  // interned problem (problem_table.h), 0 before finalize
  uint64_t problem_hash;
  int64_t min_alignment;  // smallest byte alignment over the graph's non-virtual tensors
};

struct KnobSet {
  uint8_t n;
  int32_t types[kMaxKnobs];
  int64_t values[kMaxKnobs];
};

// The problem an engine or configuration belongs to, copied from its operation graph while the
// graph is alive: cudnn-frontend may destroy the graph before it builds plans from the
// configurations (PyTorch's heuristic path does).
struct ProblemLink {
  uint64_t hash;
  uint32_t id;  // interned problem, 0 unknown
  uint32_t min_alignment;  // 0 unknown or empty link
  bool empty() const { return id == 0 && hash == 0; }
};

struct EngineState {
  ProblemLink problem;
  int64_t global_index;  // -1 unknown
};

struct EngineCfgState {
  void* engine;
  ProblemLink problem;  // from the engine, or from the heuristics query that produced this config
  KnobSet knobs;
  int64_t engine_index;  // learned by query or from the engine; -1 unknown
  uint32_t notes;        // 1 << cudnnBackendNumericalNote_t
  uint32_t behavior;     // 1 << cudnnBackendBehaviorNote_t
  uint8_t queried;
};

struct KnobChoiceState {
  int32_t type;  // cudnnBackendKnobType_t
  int64_t value;
};

struct HeurState {
  void* graph;
  int32_t mode;
};

struct PlanState {
  void* cfg;
  void* handle;
  uint32_t problem_id;
  uint32_t knobs_id;  // interned knob set, 0 none
  uint64_t problem_hash;
  int64_t engine;
  uint64_t workspace;
  uint32_t notes;
  uint32_t behavior;
  int64_t min_alignment;
  uint32_t executions;  // cudnnBackendExecute calls of this plan (the flight recorder keeps the first few)
  uint16_t deferred;    // the search budget's deferred-search slot of this plan + 1 (search_budget.cpp), 0 none
};

struct VariantPackState {
  void* workspace;
  uint32_t n_pointers;
  uint32_t min_alignment;  // smallest power-of-two alignment of the data pointers
  uint8_t aliased;         // two of the data pointers are the same buffer
};

struct PoolingState {
  int32_t mode;
  uint8_t nbdims;
  int32_t window[3], pad[3], stride[3];
};

struct ActivationState {
  int32_t mode;
  double coef;
};

struct RnnState {
  int32_t algo, cell, bias, direction, input_mode, dtype, math_prec, math_type;
  int32_t input_size, hidden_size, proj_size, layers;
};

struct RnnDataState {
  int32_t dtype, layout, max_seq, batch, vector;
};

struct CtcState {
  int32_t compute, norm, grad, max_label;
};

struct SpatialTfState {
  int32_t sampler, dtype;
  uint8_t nbdims;
  int32_t dims[5];
};

struct DescEntry {
  uint32_t id;  // unique per process: what the trace refers to
  uint16_t kind;
  uint8_t finalized;
  uint8_t owned_by_pins;  // plan pinning filled this engine configuration (plan_pins.cpp)
  uint8_t kept_by_budget;  // a deferred search keeps this engine configuration past its destroy (search_budget.cpp)
  union {
    TensorState tensor;
    ConvState conv;
    OpState op;
    GraphState graph;
    EngineState engine;
    EngineCfgState cfg;
    HeurState heur;
    KnobChoiceState knob;
    PlanState plan;
    VariantPackState pack;
    PoolingState pooling;
    ActivationState activation;
    RnnState rnn;
    RnnDataState rnn_data;
    CtcState ctc;
    SpatialTfState st;
    float dropout;
  } u;
};
static_assert(sizeof(DescEntry) <= 192, "keep mirror entries small");

// A new entry for descriptor `key` (replacing any stale one), zeroed, with a fresh id; nullptr
// when the mirror is full.
DescEntry* desc_create(const void* key, uint16_t kind);
DescEntry* desc_find(const void* key);  // nullptr when unknown
void desc_destroy(const void* key);

// Handles: the device current when cudnnCreate returned, the stream of cudnnSetStream.
void handle_created(const void* handle, int device);
void handle_set_stream(const void* handle, const void* stream);
void handle_destroyed(const void* handle);
bool handle_lookup(const void* handle, int* device, const void** stream);

}  // namespace cuprobe::shim
