// Calls per API, devices, last calls; see calls.h.
#include "analysis/trackers/calls.h"

#include <fmt/format.h>

namespace cuprobe::analysis {

CallsTracker::CallsTracker(const reader::Trace& trace)
    : trace_(trace), calls_(trace.apis().size(), 0), time_(trace.apis().size(), 0) {}

void CallsTracker::finish(ProcessFacts& f) {
  f.events = events_;
  const auto& apis = trace_.apis();
  for (size_t id = 0; id < calls_.size(); ++id) {
    if (calls_[id]) {
      f.calls_by_api[apis[id].name] += calls_[id];
      f.time_by_api[apis[id].name] += time_[id];
    }
  }
  for (const auto& c : trace_.counts()) f.calls_by_api[trace_.api_name(c.api)] += c.calls;
  uint64_t most = 0;
  for (size_t d = 0; d < device_calls_.size(); ++d) {
    if (device_calls_[d] > most) {
      most = device_calls_[d];
      f.device = int(d);
    }
  }
  for (uint64_t k = events_ > kLastCalls ? events_ - kLastCalls : 0; k < events_; ++k) {
    const LastCall& c = last_calls_[k % kLastCalls];
    f.last_calls.push_back(fmt::format("{} ret={} tid={}", trace_.api_name(c.api), c.ret, c.tid));
  }
}

}  // namespace cuprobe::analysis
