// Plan pinning (CUPROBE_PIN_PLANS; docs/plan-pinning.md): the shim steers the application's own
// cuDNN plan selection of a problem its plan file names to the pinned engine and knobs (backend
// API) or algorithm and math type (legacy API), by failing the other candidates fast.
//
// Backend selections (cudnn-frontend under PyTorch's benchmark and heuristic paths) are followed
// per thread: a heuristics query for a pinned problem says where the pinned configuration stands
// among the candidates; a plan finalize of another configuration is answered NOT_SUPPORTED
// without calling cuDNN while the pinned one can still come (it was offered, and no candidate
// after it in the offered order has been built yet) or once it was built. Otherwise the shim
// steps aside for the selection: a pinned plan not offered (another GPU, another cuDNN), skipped
// by the application's own filters, or failing for real, never leaves the application without a
// plan it would have had. Legacy cudnnFind* calls for a pinned problem are answered with the
// pinned algorithm alone (its workspace asked of cuDNN) instead of running the search;
// cudnnGet*_v7 answers get the pinned algorithm moved to the front.
//
// Costs nothing while no plan file is in force (one predicted branch in the hooks that steer).
// Each selection's outcome is one PinRecord (trace_format.h); rejected candidates are failed calls
// whose fault word names kPinFaultRule.
#pragma once

#include <stdint.h>

#include "cudnn_mirror.h"
#include "faults.h"
#include "recorder.h"

namespace cuprobe::shim {

// Whether the hooks that steer run at all: a plan file or a search budget (search_budget.h) is in
// force.
extern bool g_steer_on;

// Reads CUPROBE_PIN_PLANS (once per process, at configuration): a warning names the file and the
// problem when it cannot be used, and nothing is steered.
void pins_configure();
// Writes the kPinnedPlans property into a new trace.
void write_pin_property();

// Backend selections.
void pin_heuristics_results(ThreadState& t, const DescEntry& heur, int64_t count, void* const* cfgs);
// A heuristics query (not the fallback list) for a pinned problem: fills the application's first
// configuration with the pinned engine and knobs and returns true (the query is answered with that
// one configuration, cuDNN's heuristics do not run); false when the shim cannot (the call runs).
bool pin_heuristics_answer(ThreadState& t, void* heur_desc, void* const* cfgs, FaultHit* hit);
// Destroying a configuration the shim filled: its own descriptors go with it.
void pin_destroy_before(void* desc);
void pin_destroy_after(int status);
bool pin_finalize_before(ThreadState& t, void* plan_desc, int* code, FaultHit* hit);
void pin_finalize_after(ThreadState& t, void* plan_desc, int status);
void pin_execute_after(ThreadState& t, void* plan_desc, int status);

// Legacy selections: the pin of a problem for a Find*/Get* call (nullptr: not pinned; the
// step-aside, if any, is recorded), and what came of it.
struct LegacyPin {
  int32_t algo;
  int32_t math;
  int32_t determinism;
  float time_ms;
};
bool pin_legacy(ThreadState& t, uint32_t problem, uint64_t hash, const void* handle, LegacyPin* out);
void pin_legacy_done(ThreadState& t, uint32_t problem, uint64_t hash, bool pinned);
void pin_legacy_failed(ThreadState& t, uint32_t problem, uint64_t hash);
void pin_mark_call(FaultHit* hit);

// Whether the plan file names the problem (for any GPU, cuDNN or alignment).
bool pin_names(uint64_t hash);
// One PinRecord (the search budget writes its own selections as kBudgeted ones).
void write_pin_record(ThreadState& t, trace::PinOutcome o, uint32_t problem, uint64_t hash, int64_t engine,
                      uint32_t knobs, uint32_t flags, float pinned_ms, float search_ms, float replaced_ms = -1);

}  // namespace cuprobe::shim
