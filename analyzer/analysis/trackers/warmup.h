// The process's span (first call, end of the last), the job's (from its first work: an
// allocation, a copy, a kernel launch, a cuDNN call; not the device queries of an import), its
// steps, and where its warm-up ends: where the second training step (or iteration) began, when
// seen, else after the first part of the job (FactOptions::warmup_fraction of its span).
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

// Steps: the layer of the first problem the process ran, run again after another layer ran,
// starts a new step. Fed the layers of the problems run, in time order, with when each run
// began (its search's start when it is the winner of a search that just ended).
class StepDetector {
 public:
  static constexpr size_t kMaxSteps = 100'000;  // step starts kept; count() goes on beyond

  void on_layer(uint64_t layer, uint64_t start_ns) {
    if (first_layer_ == 0) {
      first_layer_ = layer;
      add(start_ns);
    } else if (layer != first_layer_) {
      other_layer_ran_ = true;
    } else if (other_layer_ran_) {
      other_layer_ran_ = false;
      add(start_ns);
    }
  }
  bool found() const { return count_ >= 2; }
  uint64_t second_pass_ns() const { return second_pass_ns_; }  // 0 when not seen
  uint64_t count() const { return count_; }                    // steps begun (the first included)
  const std::vector<uint64_t>& starts() const { return starts_; }
  std::vector<uint64_t> take_starts() { return std::move(starts_); }

 private:
  void add(uint64_t ts_ns) {
    if (starts_.size() < kMaxSteps) {
      if (starts_.capacity() == starts_.size()) starts_.reserve(std::min(kMaxSteps, std::max<size_t>(64, 2 * starts_.size())));
      starts_.push_back(ts_ns);
    }
    if (++count_ == 2) second_pass_ns_ = ts_ns;
  }

  uint64_t first_layer_ = 0;  // layers are never 0
  bool other_layer_ran_ = false;
  uint64_t count_ = 0;
  uint64_t second_pass_ns_ = 0;
  std::vector<uint64_t> starts_;
};

class WarmupTracker {
 public:
  // `searches`: a plan's executions while its problem's selection is open are candidates, not
  // steps; a heuristic selection's chosen plan ran where the selection began, which is known once
  // it closes (before the next problem runs), and is a run of its layer from there.
  WarmupTracker(const reader::Trace& trace, SearchesTracker& searches, const FactOptions& options);
  void on_event(const reader::Event& e, const ApiView& v) {
    second_pass_before_ = steps_.second_pass_ns();
    if (first_ == UINT64_MAX) first_ = e.ts_ns;
    if (job_start_ == UINT64_MAX && !e.sample && (v.flags & kWorkFlags) != 0) on_job_start(e);
    last_ = std::max(last_, e.ts_ns + e.dur_ns);
    if (v.runs_problem() && e.ret == 0) on_run(e, v);
  }
  // first_ns, last_ns, job_start_ns, did_work, step_starts, steps, second_pass_ns, warmup_end_ns.
  void finish(ProcessFacts& f);

  // For trackers that count the steady state as the pass goes (both ends are followed; which one
  // holds is known at the end): whether a call at ts_ns comes after the first part of the job,
  // or after the second step began as the calls before the current one showed it.
  bool past_fraction(uint64_t ts_ns) const { return fraction_known_ && ts_ns >= fraction_end_; }
  bool past_second_pass(uint64_t ts_ns) const { return second_pass_before_ && ts_ns >= second_pass_before_; }
  // Where the second step began, 0 when not seen (final once the pass is over).
  uint64_t second_pass_ns() const { return steps_.second_pass_ns(); }

 private:
  // Calls that are the job's work, not an import's queries: device memory, copies and sets,
  // kernel launches, synchronization, and cuDNN handles, plans, searches and executions.
  static constexpr uint64_t kWorkFlags =
      trace::kApiDeviceAlloc | trace::kApiMemcpy | trace::kApiCounted | trace::kApiSync | trace::kApiVaReserve |
      trace::kApiMap | trace::kApiPhysical | trace::kApiPooled | trace::kApiCudnnExec | trace::kApiAlgoSearch |
      trace::kApiWorkspaceQuery | trace::kApiPlanFinalize | trace::kApiPlanExecute | trace::kApiLegacyFind |
      trace::kApiLegacyGet | trace::kApiLegacyConvExec | trace::kApiHandleCreate | trace::kApiBlasHeuristic |
      trace::kApiBlasMatmul;

  void on_job_start(const reader::Event& e);
  void on_run(const reader::Event& e, const ApiView& v);
  void on_selection(const reader::SearchRecord& r);
  uint64_t layer(uint64_t hash, const reader::Problem* problem);

  const reader::Trace& trace_;
  const SearchesTracker& searches_;
  const double warmup_fraction_;
  const uint64_t span_end_;  // known before the pass for binary traces (the reader found the last call)
  uint64_t first_ = UINT64_MAX, last_ = 0;
  uint64_t job_start_ = UINT64_MAX;
  bool fraction_known_ = false;
  uint64_t fraction_end_ = 0;
  StepDetector steps_;
  uint64_t second_pass_before_ = 0;  // steps_.second_pass_ns() before the current call
  std::unordered_map<uint64_t, uint64_t> layers_;  // problem hash -> layer
};

}  // namespace cuprobe::analysis
