// The fault plan the process ran under: each call it replaced and what the application did next
// on that thread (a retry of the same call, after freeing memory or asking for less, a move to
// another cuDNN plan or algorithm, other work, or nothing of the kind again), and each rule (or
// the memory cap) with what it did.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

class FaultTracker {
 public:
  explicit FaultTracker(const reader::Trace& trace);
  void on_event(const reader::Event& e, const ApiView& v) {
    if (e.api == abort_api_ && abort_ns_ == 0) abort_ns_ = e.ts_ns;
    if (active_) follow(e, v);
  }
  // injected, fault_rules, mem_cap, nccl_abort_ns.
  void finish(ProcessFacts& f);

 private:
  // An injected fault whose outcome the thread's next calls will tell.
  struct Pending {
    size_t index;          // into injected_
    const ApiView* view;   // of the call that was replaced
    uint64_t size;
    uint64_t plan;  // plan id (execute) or descriptor id (finalize)
    uint64_t hash;
    int64_t algo;
    int frees = 0;
  };

  void follow(const reader::Event& e, const ApiView& v);
  bool done(const Pending& p, const reader::Event& e, const char* outcome);
  bool resolve(Pending& p, const reader::Event& e, const ApiView& v);

  const reader::Trace& trace_;
  const bool active_;  // the trace has a fault plan
  std::set<int> delay_rules_;  // rules whose ERROR is DELAY: a fired call waits, then runs
  int abort_api_ = -1;  // ncclCommAbort's API id in this trace
  uint64_t abort_ns_ = 0;
  std::vector<InjectedFault> injected_;
  std::unordered_map<uint32_t, std::vector<Pending>> pending_;  // by thread
};

}  // namespace cuprobe::analysis
