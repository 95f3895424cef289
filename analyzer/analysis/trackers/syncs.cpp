// Synchronizations; see syncs.h.
#include "analysis/trackers/syncs.h"

#include "analysis/trackers/memory.h"

namespace cuprobe::analysis {

SyncTracker::SyncTracker(const reader::Trace& trace, const SearchesTracker& searches)
    : trace_(trace), searches_(searches), calls_(trace.apis().size(), 0), time_(trace.apis().size(), 0) {}

// Only APIs the trace describes have flags: e.api is in range.
void SyncTracker::on_sync(const reader::Event& e, const ApiView& v) {
  ++calls_[e.api];
  if (memory_call(v, e) != MemoryCall::kNone) return;  // the memory tracker's call (memory.h)
  if (searches_.selecting(e.tid) != nullptr) return;   // part of the search's cost
  time_[e.api] += e.dur_ns;
  if (syncs_++ % stride_ != 0) return;
  if (stacks_.size() == kMaxStacks) {
    for (size_t i = 0; i < kMaxStacks / 2; ++i) stacks_[i] = stacks_[2 * i];
    stacks_.resize(kMaxStacks / 2);
    stride_ *= 2;
    if ((syncs_ - 1) % stride_ != 0) return;
  }
  stacks_.push_back(e.stack);
}

void SyncTracker::finish(ProcessFacts& f) {
  const auto& apis = trace_.apis();
  for (size_t id = 0; id < calls_.size(); ++id) {
    if (calls_[id]) f.sync_ns[apis[id].name] += time_[id];
  }
  f.sync_calls = syncs_;
  f.sync_stacks = std::move(stacks_);
  f.sync_stack_stride = stride_;
}

}  // namespace cuprobe::analysis
