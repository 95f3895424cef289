// The cuDNN capture logic that is more than a few lines: mirroring backend attributes,
// finalizing operation graphs and plans (problem signature, engine, knobs, notes, workspace),
// legacy problems and algorithm results. Called from the Capture<> specializations in
// capture_cudnn.h, on the calling thread, with the thread's guard held (calls the shim makes
// into cuDNN itself go to the real functions and are not recorded).
#pragma once

#include <cudnn.h>
#include <stdint.h>

#include "cudnn_mirror.h"
#include "plan_pin_text.h"
#include "cuprobe/problem.h"

namespace cuprobe::shim {

// What an event says about the problem it belongs to.
struct ProblemRef {
  uint32_t id = 0;  // interned problem (problem_table.h), 0 when unknown
  uint64_t hash = 0;
};

void mirror_set_attribute(DescEntry& e, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                          int64_t count, const void* elements);
// Learns from a successful GetAttribute; true when the call is worth an event (heuristics results).
bool mirror_get_attribute(DescEntry& e, cudnnBackendAttributeName_t name, int64_t count, const void* elements);
// After a Finalize (successful or not) of an operation graph or an execution plan: fills in the
// problem, engine, knobs, notes and workspace. True when the finalize is worth an event.
bool mirror_finalize(DescEntry& e, const void* desc, cudnnStatus_t status);

// Legacy descriptor setters (created on the spot when the descriptor was made before the shim
// saw it). Tensors without strides are packed in `format` order; filters keep their format.
void set_legacy_tensor(const void* d, int dtype, int nbdims, const int* dims, const int* strides, int format);
void set_legacy_filter(const void* d, int dtype, int format, int nbdims, const int* dims);
void set_legacy_conv(const void* d, int n, const int* pad, const int* stride, const int* dilation, int mode,
                     int compute);
void set_legacy_pooling(const void* d, int mode, int n, const int* window, const int* pad, const int* stride);

ProblemRef graph_problem_of(const DescEntry* graph);

// The real backend functions, for the cuDNN calls the shim makes itself (not recorded).
struct BackendFns {
  decltype(&::cudnnBackendCreateDescriptor) create;
  decltype(&::cudnnBackendDestroyDescriptor) destroy;
  decltype(&::cudnnBackendSetAttribute) set;
  decltype(&::cudnnBackendGetAttribute) get;
  decltype(&::cudnnBackendFinalize) finalize;
  bool ok() const { return create && destroy && set && get && finalize; }
};
BackendFns backend_fns();

// The engine configuration a plan is built from, with its engine index and problem resolved
// (asking cuDNN when heuristics filled it); nullptr when the plan has none the mirror knows.
EngineCfgState* plan_cfg(PlanState& plan);
// Asks cuDNN which engine, knobs and notes a configuration holds (once: sets cfg.queried).
void query_cfg(EngineCfgState& cfg, void* cfg_desc);
// The interned id of a configuration's knob set (what a plan built from it records).
uint32_t cfg_knobs_id(const EngineCfgState& cfg);
const DescEntry* graph_of_heur(const DescEntry* heur);
// The problem of a heuristics query's operation graph.
ProblemLink heur_problem(const DescEntry& heur);

// Plan pinning's identity of a configuration: the engine and the knob text the trace shows
// (render_knobs of the sorted knob set), hashed. cfg_key asks cuDNN what the configuration holds
// when the mirror does not know yet; 0 when that cannot be told.
using pins::plan_key;  // common/plan_pin_text.h
uint64_t cfg_key(EngineCfgState& cfg, void* cfg_desc);

// Legacy problems, cached per thread by the raw descriptor states so that a repeated problem
// costs a hash, not a new signature.
using trace::ProblemOp;
ProblemRef legacy_conv_problem(ProblemOp op, const void* in0, const void* in1, const void* conv, const void* out,
                               bool bias_act = false);
ProblemRef legacy_bn_problem(ProblemOp op, int mode, int ops, const void* x);
ProblemRef legacy_pool_problem(ProblemOp op, const void* pool, const void* x, const void* y);
ProblemRef legacy_rnn_problem(ProblemOp op, const void* rnn, const void* x, int fwd_mode);
ProblemRef legacy_ctc_problem(const void* probs, int algo);
ProblemRef legacy_st_problem(ProblemOp op, const void* st, const void* x, const void* y);
int legacy_math_type(const void* conv);

// An AlgoResultsRecord of n (at most trace::kMaxAlgoResults) results reserved in the calling
// thread's kept stream, its header, id and count set; the caller fills results[0..n) and commits
// `*size` bytes (commit_kept). nullptr when nothing can be written. cuDNN's and cuBLASLt's results
// take their ids from one counter: readers find a call's results by id.
trace::AlgoResultsRecord* begin_algo_results(int n, uint32_t* size);

// The first n results of a legacy Find*/Get* call as an AlgoResultsRecord written on the calling
// thread; returns its id (0 when there are none).
uint32_t algo_results_raw(const int* algo, const int* status, const float* time, const size_t* memory, const int* det,
                          const int* math, int n, int stride_bytes);
template <typename Perf>
uint32_t algo_results(const Perf* r, int n) {
  if (r == nullptr || n <= 0) return 0;
  return algo_results_raw(reinterpret_cast<const int*>(&r[0].algo), reinterpret_cast<const int*>(&r[0].status),
                          &r[0].time, &r[0].memory, reinterpret_cast<const int*>(&r[0].determinism),
                          reinterpret_cast<const int*>(&r[0].mathType), n, int(sizeof(Perf)));
}

// Smallest power-of-two alignment of the given addresses (nullptrs ignored), capped at 256.
uint32_t min_alignment(const void* const* ptrs, int n);

}  // namespace cuprobe::shim
