// Calls per API and the time spent inside them, the device most calls ran on, and the process's
// final calls (for traces that end unfinished).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

class CallsTracker {
 public:
  explicit CallsTracker(const reader::Trace& trace);
  void on_event(const reader::Event& e, const ApiView&) {
    if (e.api < calls_.size()) {
      ++calls_[e.api];
      time_[e.api] += e.dur_ns;
    }
    if (e.device >= 0) {
      if (size_t(e.device) >= device_calls_.size()) device_calls_.resize(size_t(e.device) + 1, 0);
      ++device_calls_[size_t(e.device)];
    }
    last_calls_[events_++ % kLastCalls] = LastCall{e.api, e.ret, e.tid};
  }
  // events, calls_by_api, time_by_api (with the trace's counted calls), device, last_calls.
  void finish(ProcessFacts& f);

 private:
  static constexpr size_t kLastCalls = 8;
  struct LastCall {
    uint16_t api = 0;
    int32_t ret = 0;
    uint32_t tid = 0;
  };

  const reader::Trace& trace_;
  uint64_t events_ = 0;
  std::vector<uint64_t> calls_, time_;  // by API id
  std::vector<uint64_t> device_calls_;  // by device ordinal
  LastCall last_calls_[kLastCalls];     // a ring: call k at k % kLastCalls
};

}  // namespace cuprobe::analysis
