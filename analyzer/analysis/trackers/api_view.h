// What the trackers read of an API, resolved once per trace: its role (from the trace's flags,
// trace::ApiFlags; never from its name) and the positions of the fields they use.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/problem_access.h"
#include "trace/reader.h"

namespace cuprobe::analysis {

struct ApiView {
  const reader::Api* api = nullptr;
  uint64_t flags = 0;            // trace::ApiFlags
  bool cudnn = false;            // a cuDNN function
  bool backend_execute = false;  // kApiPlanExecute: cudnnBackendExecute
  bool finalize = false;         // kApiPlanFinalize: cudnnBackendFinalize
  bool legacy_exec = false;      // kApiLegacyConvExec: a legacy convolution
  bool blas_matmul = false;      // kApiBlasMatmul: a cuBLASLt matmul (its algorithm as engine and knobs)
  bool physical = false;  // allocations and frees name a physical memory handle, not an address
  int ptr = -1, size = -1, engine = -1, knobs = -1, algo = -1, align = -1;
  int plan = -1, desc = -1;
  int caller = -1, free_bytes = -1, total = -1;
  int allocated = -1, reserved = -1;  // PyTorch's out-of-memory report: bytes in tensors, bytes it held
  int pool = -1, attr = -1, value = -1;  // kApiPoolInfo: a pool's attribute
  ProblemFields problem;  // read through problem_access.h only

  // Runs a cuDNN problem with a chosen plan (backend) or algorithm (legacy).
  bool runs_problem() const { return backend_execute || legacy_exec; }
  // Runs a problem with a chosen plan or algorithm, cuDNN's or cuBLASLt's (plan use, timelines).
  bool runs_chosen() const { return runs_problem() || blas_matmul; }
  // Its choice is an engine (or cuBLASLt algorithm) with knobs, not a legacy algorithm number.
  bool engine_and_knobs() const { return backend_execute || blas_matmul; }
};

// A field of a call; 0 when the API has no such field or the call did not carry it.
inline uint64_t field(const reader::Event& e, int i) { return i >= 0 && i < e.nargs ? e.args[i] : 0; }

class ApiViews {
 public:
  explicit ApiViews(const reader::Trace& trace);
  // The view of a call's API; an empty one (no flags, no fields) for an id the trace does not
  // describe, so that such calls are counted but take part in nothing else.
  const ApiView& operator[](uint16_t api) const { return api < views_.size() ? views_[api] : unknown_; }

 private:
  std::vector<ApiView> views_;
  ApiView unknown_;
};

}  // namespace cuprobe::analysis
