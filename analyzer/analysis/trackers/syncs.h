// Time the host spent waiting for the device, per synchronizing API, outside plan selection
// (a search's synchronizations are part of the search's cost).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

class SyncTracker {
 public:
  // `searches`: whether the calling thread is choosing a plan.
  SyncTracker(const reader::Trace& trace, const SearchesTracker& searches);
  void on_event(const reader::Event& e, const ApiView& v) {
    if (v.flags & trace::kApiSync) on_sync(e, v);
  }
  // sync_ns (every synchronizing API called, even for no time), sync_calls, sync_stacks.
  void finish(ProcessFacts& f);

  // Stacks kept of the counted synchronizations: one of every `stride`, the stride doubling
  // (and every other kept stack dropped) each time the buffer fills, so that a long run is
  // sampled evenly from start to end in bounded memory.
  static constexpr size_t kMaxStacks = 4096;

 private:
  void on_sync(const reader::Event& e, const ApiView& v);

  const reader::Trace& trace_;
  const SearchesTracker& searches_;
  std::vector<uint64_t> calls_, time_;  // by API id, of synchronizing APIs
  uint64_t syncs_ = 0;
  std::vector<reader::StackId> stacks_;
  uint64_t stride_ = 1;
};

}  // namespace cuprobe::analysis
