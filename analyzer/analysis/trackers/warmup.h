// The process's span (first call, end of the last) and where its warm-up ends: where the second
// training step (or iteration) began, when seen, else after the first part of the run
// (FactOptions::warmup_fraction of the span).
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

// The second step: the layer of the first problem the process ran, run again after another
// layer ran. Fed the layers of the problems run, in time order.
class StepDetector {
 public:
  void on_layer(uint64_t layer, uint64_t ts_ns) {
    if (second_pass_ns_ != 0) return;
    if (first_layer_ == 0) {
      first_layer_ = layer;
    } else if (layer != first_layer_) {
      other_layer_ran_ = true;
    } else if (other_layer_ran_) {
      second_pass_ns_ = ts_ns;
    }
  }
  bool found() const { return second_pass_ns_ != 0; }
  uint64_t second_pass_ns() const { return second_pass_ns_; }  // 0 when not seen

 private:
  uint64_t first_layer_ = 0;  // layers are never 0
  bool other_layer_ran_ = false;
  uint64_t second_pass_ns_ = 0;
};

class WarmupTracker {
 public:
  // `searches`: a plan's executions while its problem's selection is open are candidates, not steps.
  WarmupTracker(const reader::Trace& trace, const SearchesTracker& searches, const FactOptions& options);
  void on_event(const reader::Event& e, const ApiView& v) {
    second_pass_before_ = steps_.second_pass_ns();
    if (first_ == UINT64_MAX) on_first(e);
    last_ = std::max(last_, e.ts_ns + e.dur_ns);
    if (v.runs_problem() && e.ret == 0 && !steps_.found()) on_run(e, v);
  }
  // first_ns, last_ns, second_pass_ns, warmup_end_ns.
  void finish(ProcessFacts& f);

  // For trackers that count the steady state as the pass goes (both ends are followed; which one
  // holds is known at the end): whether a call at ts_ns comes after the first part of the run,
  // or after the second step began as the calls before the current one showed it.
  bool past_fraction(uint64_t ts_ns) const { return fraction_known_ && ts_ns >= fraction_end_; }
  bool past_second_pass(uint64_t ts_ns) const { return second_pass_before_ && ts_ns >= second_pass_before_; }
  // Where the second step began, 0 when not seen (final once the pass is over).
  uint64_t second_pass_ns() const { return steps_.second_pass_ns(); }

 private:
  void on_first(const reader::Event& e);
  void on_run(const reader::Event& e, const ApiView& v);

  const reader::Trace& trace_;
  const SearchesTracker& searches_;
  const double warmup_fraction_;
  const uint64_t span_end_;  // known before the pass for binary traces (the reader found the last call)
  uint64_t first_ = UINT64_MAX, last_ = 0;
  bool fraction_known_ = false;
  uint64_t fraction_end_ = 0;
  StepDetector steps_;
  uint64_t second_pass_before_ = 0;  // steps_.second_pass_ns() before the current call
  std::unordered_map<uint64_t, uint64_t> layers_;  // problem hash -> layer
};

}  // namespace cuprobe::analysis
