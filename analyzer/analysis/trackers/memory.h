// Device memory as the process used it: allocations and frees replayed (addresses and physical
// handles), virtual address reservations and mappings, stream-ordered pools, the device's own
// memory samples against what was seen, out-of-memory failures with what was live then (and
// the framework's report of them), and allocation churn after warm-up.
//
// Memory is bounded by what is live at once, not by the trace's length.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/trackers/memory_replay.h"
#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"
#include "analysis/trackers/warmup.h"

namespace cuprobe::analysis {

// Which of the memory tracker's kinds a call is, in the order they are told apart: a call is
// at most one of them, and a call that is one is the memory tracker's alone (a synchronizing
// API's call among them is not counted as a synchronization).
enum class MemoryCall { kNone, kAlloc, kFree, kAddressSpace, kSample, kPoolSample, kOomReport };
inline MemoryCall memory_call(const ApiView& v, const reader::Event& e) {
  constexpr uint64_t kAddressSpace = trace::kApiVaReserve | trace::kApiVaFree | trace::kApiMap | trace::kApiUnmap;
  if (v.flags & trace::kApiDeviceAlloc) return MemoryCall::kAlloc;  // failed ones too: out of memory
  if ((v.flags & trace::kApiDeviceFree) && e.ret == 0) return MemoryCall::kFree;
  if ((v.flags & kAddressSpace) && e.ret == 0) return MemoryCall::kAddressSpace;
  if ((v.flags & trace::kApiMemInfo) && e.sample && e.ret == 0 && e.device >= 0) return MemoryCall::kSample;
  if ((v.flags & trace::kApiPoolInfo) && e.sample && e.ret == 0 && e.device >= 0) return MemoryCall::kPoolSample;
  if (v.flags & trace::kApiOomReport) return MemoryCall::kOomReport;
  return MemoryCall::kNone;
}

class MemoryTracker {
 public:
  // `searches`: allocations while a thread chooses a plan are that search's workspace.
  // `warmup`: allocation churn counts from the end of warm-up.
  MemoryTracker(const reader::Trace& trace, const SearchesTracker& searches, const WarmupTracker& warmup);
  void on_event(const reader::Event& e, const ApiView& v) {
    ++events_;
    if (MemoryCall kind = memory_call(v, e); kind != MemoryCall::kNone) on_memory_call(kind, e, v);
    // cuDNN work that ran: the process went on after its out-of-memory failures.
    if (v.runs_problem() && e.ret == 0 && continued_upto_ < ooms_.size()) mark_continued();
  }
  // memory, coverage, ooms, steady_allocs, steady_frees, steady_alloc_ns, steady_alloc_bytes,
  // steady_alloc_stacks.
  void finish(ProcessFacts& f);

  // A live allocation as the pass keeps it: no strings, which are made only for the few an
  // out-of-memory report names.
  struct LiveAllocation {
    uint64_t size = 0;
    uint64_t ts_ns = 0;
    uint64_t caller = 0;
    uint32_t tid = 0;
    uint16_t api = 0;
    int16_t device = -1;
    bool during_search = false;
    reader::StackId stack;
    std::string search_problem;  // only while cuDNN chose a plan (rare)
  };

 private:
  struct Churn {
    uint64_t allocs = 0, frees = 0, ns = 0, bytes = 0;
    std::vector<reader::StackId> stacks;  // of the allocations that have one (the first 4096)
  };
  // Live bytes per allocation site: (API, calling module address, or the stack tagged kHandleTag).
  using Site = std::pair<uint16_t, uint64_t>;

  void on_memory_call(MemoryCall kind, const reader::Event& e, const ApiView& v);
  void on_alloc(const reader::Event& e, const ApiView& v);
  void on_free(const reader::Event& e, const ApiView& v);
  void on_address_space(const reader::Event& e, const ApiView& v);
  void on_sample(const reader::Event& e, const ApiView& v);
  void on_pool_sample(const reader::Event& e, const ApiView& v);
  uint64_t pool_reserved_on(int device) const;  // what the device's pools held at their latest samples
  void on_oom_report(const reader::Event& e, const ApiView& v);
  // Accounts for a block the replay released (a free, or one replaced by an allocation at its
  // address); `physical`, `pooled`: the kind of memory the release gives back.
  void release(const LiveAllocation& a, bool physical, bool pooled);
  void describe_live(OomEvent& o);
  void mark_continued();

  const reader::Trace& trace_;
  const SearchesTracker& searches_;
  const WarmupTracker& warmup_;
  uint64_t events_ = 0;
  std::map<int, DeviceMemory> memory_;
  std::map<int, MemoryCoverage> coverage_;
  std::vector<OomEvent> ooms_;
  MemoryReplay<LiveAllocation> replay_;  // shared with the export timeline (memory_replay.h)
  // Live bytes per device and allocation site, and their split at the device's peak: owners are
  // named once, at the end.
  std::map<int, std::map<Site, uint64_t>> site_live_, peak_sites_;
  // Physical pages each thread created since its last mapping: the pieces of a request in progress.
  std::unordered_map<uint32_t, uint64_t> pending_pages_;
  // Out-of-memory bookkeeping: each thread's latest failure until its next allocation, and the
  // failures not yet followed by successful work.
  std::unordered_map<uint32_t, size_t> last_oom_of_thread_;
  size_t continued_upto_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> recent_frees_;  // (ts, bytes) in the last second
  // Churn from both possible ends of warm-up; which one holds is known at the end of the pass.
  Churn after_fraction_, after_second_pass_;
  // When each allocation and free that churn counts happened (the first kMaxChurnTimes), for
  // rules that ask whether churn lasted or died down.
  static constexpr size_t kMaxChurnTimes = size_t(1) << 20;
  std::vector<uint64_t> churn_ts_;
  std::vector<ChurnCall> churn_calls_;
  // Bytes-exact sizes of blocks given back by churn frees and not taken again yet, with counts.
  std::unordered_map<uint64_t, uint32_t> freed_sizes_;
  uint64_t retry_frees_ = 0;
  // What each pool held reserved at its latest sample, per device (the shim samples pools just
  // before the device's own account).
  std::map<int, std::map<uint64_t, uint64_t>> pool_reserved_;
  // A pool's failed request per device, until the samples the shim takes right after it.
  std::map<int, size_t> pool_oom_;
  uint64_t plain_allocs_ = 0, physical_allocs_ = 0, pooled_allocs_ = 0;
};

}  // namespace cuprobe::analysis
