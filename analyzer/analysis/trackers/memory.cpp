// Device memory; see memory.h.
#include "analysis/trackers/memory.h"

#include <algorithm>

#include <fmt/format.h>

namespace cuprobe::analysis {

namespace {

constexpr int32_t kCudaOom = 2;  // cudaErrorMemoryAllocation
constexpr size_t kLargest = 5;

// Allocation sites are an allocating module's address or, for a call without one, its stack id
// under this tag.
constexpr uint64_t kHandleTag = 1ull << 63;

using LiveAllocation = MemoryTracker::LiveAllocation;
using Replay = MemoryReplay<LiveAllocation>;

Allocation describe(const reader::Trace& trace, uint64_t ptr, const LiveAllocation& l) {
  Allocation a;
  a.ptr = ptr;
  a.size = l.size;
  a.ts_ns = l.ts_ns;
  a.tid = l.tid;
  a.stack = l.stack;
  a.api = trace.api_name(l.api);
  const reader::Api* api = trace.api(l.api);
  a.owner = api ? owner_of(trace, *api, l.caller, l.stack) : "unknown";
  bool physical = api && (api->flags & trace::kApiPhysical);
  bool torch_allocator = a.owner.rfind("PyTorch", 0) == 0;
  a.kind = l.during_search                                 ? AllocationKind::kSearchWorkspace
           : physical                                      ? AllocationKind::kPhysical
           : torch_allocator && (l.size % (2u << 20)) == 0 ? AllocationKind::kCachingSegment
           : a.owner != "unknown" && !torch_allocator      ? AllocationKind::kOtherOwner
                                                           : AllocationKind::kPlain;
  switch (a.kind) {
    case AllocationKind::kSearchWorkspace:
      a.purpose = "workspace while cuDNN chose a plan for " + l.search_problem;
      break;
    case AllocationKind::kPhysical:
      a.purpose = "physical memory mapped into a reserved range";
      break;
    case AllocationKind::kCachingSegment:
      a.purpose = "caching-allocator segment";
      break;
    case AllocationKind::kOtherOwner:
      a.purpose = "allocated by " + a.owner;
      break;
    case AllocationKind::kPlain:
      a.purpose = "allocation";
      break;
  }
  return a;
}

// Owners of the live allocations on `device`, by bytes.
std::map<std::string, uint64_t> live_by_owner(const reader::Trace& trace, const Replay& replay, int device) {
  std::map<std::pair<uint16_t, std::pair<uint64_t, uint32_t>>, uint64_t> by_site;  // (api, caller, stack) -> bytes
  for (const auto& [key, l] : replay.live()) {
    const LiveAllocation& a = l.block;
    if (a.device == device) by_site[{a.api, {a.caller, a.caller ? 0 : a.stack}}] += a.size;
  }
  std::map<std::string, uint64_t> out;
  for (const auto& [site, bytes] : by_site) {
    const reader::Api* api = trace.api(site.first);
    out[api ? owner_of(trace, *api, site.second.first, reader::StackId(site.second.second)) : "unknown"] += bytes;
  }
  return out;
}

}  // namespace

MemoryTracker::MemoryTracker(const reader::Trace& trace, const SearchesTracker& searches, const WarmupTracker& warmup)
    : trace_(trace), searches_(searches), warmup_(warmup) {}

void MemoryTracker::on_memory_call(MemoryCall kind, const reader::Event& e, const ApiView& v) {
  switch (kind) {
    case MemoryCall::kAlloc: on_alloc(e, v); break;
    case MemoryCall::kFree: on_free(e, v); break;
    case MemoryCall::kAddressSpace: on_address_space(e, v); break;
    case MemoryCall::kSample: on_sample(e, v); break;
    case MemoryCall::kPoolSample: on_pool_sample(e, v); break;
    case MemoryCall::kOomReport: on_oom_report(e, v); break;
    case MemoryCall::kNone: break;
  }
}

void MemoryTracker::mark_continued() {
  for (; continued_upto_ < ooms_.size(); ++continued_upto_) ooms_[continued_upto_].continued = true;
}

void MemoryTracker::describe_live(OomEvent& o) {
  const DeviceMemory& m = memory_[o.device];
  o.live = m.live;
  o.peak = m.peak;
  std::vector<std::pair<uint64_t, const LiveAllocation*>> on_device;
  for (const auto& [key, l] : replay_.live()) {
    if (l.block.device == o.device) on_device.emplace_back(Replay::address(key), &l.block);
  }
  size_t n = std::min(kLargest, on_device.size());
  std::partial_sort(on_device.begin(), on_device.begin() + ptrdiff_t(n), on_device.end(),
                    [](const auto& x, const auto& y) { return x.second->size > y.second->size; });
  for (size_t k = 0; k < n; ++k) o.largest.push_back(describe(trace_, on_device[k].first, *on_device[k].second));
  o.live_by_owner = live_by_owner(trace_, replay_, o.device);
}

void MemoryTracker::on_alloc(const reader::Event& e, const ApiView& v) {
  DeviceMemory& m = memory_[e.device];
  m.device = e.device;
  uint64_t size = field(e, v.size);
  // Churn is memory taken and given back in the steady state; failed calls and the caching
  // allocator's flush after an out-of-memory failure are the out-of-memory story instead.
  bool flushing = last_oom_of_thread_.count(e.tid) != 0;
  // A pool's allocations are cheap by design (memory stays in the pool): never churn.
  bool pooled = (v.flags & trace::kApiPooled) != 0;
  // A benchmark search's own workspace, and the cache PyTorch empties once it has timed the
  // candidates, are the search's cost (research-storm), not churn.
  const std::string* selecting = searches_.selecting(e.tid);
  if (e.ret == 0) ++(v.physical ? physical_allocs_ : pooled ? pooled_allocs_ : plain_allocs_);
  if (e.ret == 0 && !flushing && !pooled && selecting == nullptr) {
    if (churn_ts_.size() < kMaxChurnTimes) {
      churn_ts_.push_back(e.ts_ns);
      ChurnCall c{e.ts_ns, e.dur_ns, size, true, v.physical, false};
      if (auto it = freed_sizes_.find(size); it != freed_sizes_.end()) {
        c.again = true;
        if (--it->second == 0) freed_sizes_.erase(it);
      }
      churn_calls_.push_back(c);
    }
    for (Churn* c : {warmup_.past_fraction(e.ts_ns) ? &after_fraction_ : nullptr,
                     warmup_.past_second_pass(e.ts_ns) ? &after_second_pass_ : nullptr}) {
      if (c == nullptr) continue;
      ++c->allocs;
      c->ns += e.dur_ns;
      c->bytes += size;
      if (e.stack && c->stacks.size() < 4096) c->stacks.push_back(e.stack);
    }
  }
  if (e.ret == 0) {
    LiveAllocation a;
    a.size = size;
    a.ts_ns = e.ts_ns;
    a.tid = e.tid;
    a.api = e.api;
    a.device = e.device;
    a.caller = field(e, v.caller);
    a.stack = e.stack;
    if (selecting) {
      a.during_search = true;
      a.search_problem = *selecting;
    }
    Site site{e.api, a.caller ? a.caller : uint64_t(a.stack) | kHandleTag};
    // An address still live lost its free somewhere: that block is gone first (memory_replay.h).
    if (auto old = replay_.alloc(v.physical, field(e, v.ptr), size, e.device, std::move(a))) {
      const reader::Api* old_api = trace_.api(old->block.api);
      release(old->block, v.physical, old_api != nullptr && (old_api->flags & trace::kApiPooled));
    }
    m.allocated += size;
    ++m.allocations;
    m.live = replay_.totals(e.device).live;
    if (v.physical) {
      m.physical_live += size;
      m.physical_peak = std::max(m.physical_peak, m.physical_live);
    }
    if (pooled) {
      m.pooled_live += size;
      m.pooled_peak = std::max(m.pooled_peak, m.pooled_live);
    }
    if (v.physical) pending_pages_[e.tid] += size;
    site_live_[e.device][site] += size;
    if (m.live > m.peak) {
      m.peak = m.live;
      peak_sites_[e.device] = site_live_[e.device];
    }
    // A physical page is a piece of a request (a mapping is made of them): whether the request
    // got its memory is known when it is mapped, not when one more page could be had.
    auto last = v.physical ? last_oom_of_thread_.end() : last_oom_of_thread_.find(e.tid);
    if (last != last_oom_of_thread_.end()) {
      OomEvent& oom = ooms_[last->second];
      if (oom.requested == size && oom.device == e.device) oom.retried_ok = true;
      last_oom_of_thread_.erase(last);
    }
    mark_continued();
  } else if (e.ret == kCudaOom) {
    // A pool that failed to grow by `size` may keep what it got before failing (seen on an
    // H200: 19 GiB of a 30 GiB cudaMallocAsync stayed in the pool).
    if (pooled) m.pooled_peak = std::max(m.pooled_peak, m.pooled_live + size);
    if (pooled) pool_oom_[e.device] = ooms_.size();  // the OomEvent pushed below
    OomEvent o;
    o.ts_ns = e.ts_ns;
    o.tid = e.tid;
    o.device = e.device;
    o.api = v.api->name;
    o.requested = size;
    o.failed_call_size = size;
    if (pooled) o.pool_live = m.pooled_live;
    if (v.physical) o.partial = std::exchange(pending_pages_[e.tid], 0);
    o.owner = owner_of(trace_, *v.api, field(e, v.caller), e.stack);
    o.ret = e.ret;
    o.stack = e.stack;
    describe_live(o);
    while (!recent_frees_.empty() && recent_frees_.front().first + 1000000000ull < e.ts_ns) recent_frees_.pop_front();
    for (const auto& fr : recent_frees_) {
      o.freed_before += fr.second;
      ++o.frees_before;
    }
    if (selecting) o.search_problem = *selecting;
    if (e.injected()) {
      const reader::FaultRule* r = trace_.fault_rule(e.fault_rule);
      o.injected_by = r ? r->name : fmt::format("rule{}", e.fault_rule + 1);
      o.mem_cap = r && r->is_mem_cap();
    }
    o.event_index = events_;
    auto last = last_oom_of_thread_.find(e.tid);
    if (last != last_oom_of_thread_.end()) {
      const OomEvent& prev = ooms_[last->second];
      o.is_retry = prev.requested == size && prev.device == e.device && !prev.is_retry;
    }
    last_oom_of_thread_[e.tid] = ooms_.size();
    ooms_.push_back(std::move(o));
  }
}

void MemoryTracker::on_free(const reader::Event& e, const ApiView& v) {
  bool flushing = last_oom_of_thread_.count(e.tid) != 0;
  bool pooled = (v.flags & trace::kApiPooled) != 0;
  auto gone = replay_.free(v.physical, field(e, v.ptr));
  if (flushing && !pooled) ++retry_frees_;
  if (!flushing && !pooled && searches_.selecting(e.tid) == nullptr) {
    if (churn_ts_.size() < kMaxChurnTimes) {
      churn_ts_.push_back(e.ts_ns);
      uint64_t size = gone ? gone->size : 0;
      churn_calls_.push_back(ChurnCall{e.ts_ns, e.dur_ns, size, false, v.physical, false});
      if (size != 0 && freed_sizes_.size() < kMaxChurnTimes) ++freed_sizes_[size];
    }
    for (Churn* c : {warmup_.past_fraction(e.ts_ns) ? &after_fraction_ : nullptr,
                     warmup_.past_second_pass(e.ts_ns) ? &after_second_pass_ : nullptr}) {
      if (c == nullptr) continue;
      ++c->frees;
      c->ns += e.dur_ns;
    }
  }
  if (!gone) return;
  release(gone->block, v.physical, pooled);
  recent_frees_.emplace_back(e.ts_ns, gone->size);
  if (recent_frees_.size() > 4096) recent_frees_.pop_front();
}

void MemoryTracker::release(const LiveAllocation& a, bool physical, bool pooled) {
  DeviceMemory& m = memory_[a.device];
  m.live = replay_.totals(a.device).live;
  if (physical) m.physical_live -= std::min(m.physical_live, a.size);
  if (pooled) m.pooled_live -= std::min(m.pooled_live, a.size);
  uint64_t& at_site = site_live_[a.device][Site{a.api, a.caller ? a.caller : uint64_t(a.stack) | kHandleTag}];
  at_site -= std::min(at_site, a.size);
}

void MemoryTracker::on_address_space(const reader::Event& e, const ApiView& v) {
  DeviceMemory& m = memory_[e.device];
  m.device = e.device;
  uint64_t size = field(e, v.size);
  if (v.flags & trace::kApiVaReserve) {
    m.reserved += size;
    m.reserved_peak = std::max(m.reserved_peak, m.reserved);
  } else if (v.flags & trace::kApiVaFree) {
    m.reserved -= std::min(m.reserved, size);
  } else if (v.flags & trace::kApiMap) {
    m.mapped += size;
    pending_pages_.erase(e.tid);
    // The pages of a request are mapped once all of them could be created: a request that
    // failed for want of a page and is mapped now got its memory on a retry.
    auto last = last_oom_of_thread_.find(e.tid);
    if (last != last_oom_of_thread_.end()) {
      OomEvent& oom = ooms_[last->second];
      if (oom.device == e.device && oom.framework_request == 0) oom.retried_ok = true;
      last_oom_of_thread_.erase(last);
    }
  } else {
    m.mapped -= std::min(m.mapped, size);
  }
}

void MemoryTracker::on_sample(const reader::Event& e, const ApiView& v) {
  // The device's own account against what cuprobe saw; the first sample is the baseline
  // (the context, and whatever else was on the device before this process allocated).
  uint64_t total = field(e, v.total), free_bytes = field(e, v.free_bytes);
  if (total == 0 || free_bytes > total) return;
  pool_oom_.erase(e.device);  // the pools were sampled just before this sample, if at all
  MemoryCoverage& c = coverage_[e.device];
  c.device = e.device;
  c.total = total;
  uint64_t used = total - free_bytes;
  const DeviceMemory& m = memory_[e.device];
  // Pools: what they hold reserved when the shim sampled them (trace::kApiPoolInfo), else their
  // peak of live allocations standing for it (freed pool memory stays reserved until trimmed).
  uint64_t pooled = m.pooled_peak;
  if (pool_reserved_.count(e.device)) {
    pooled = std::max(pool_reserved_on(e.device), m.pooled_live);
    c.pools_sampled = true;
  }
  uint64_t seen = m.live - std::min(m.live, m.pooled_live) + pooled;
  int64_t gap = int64_t(used) - int64_t(seen);
  if (c.samples++ == 0) c.baseline_gap = uint64_t(std::max<int64_t>(gap, 0));
  uint64_t unaccounted = uint64_t(std::max<int64_t>(gap - int64_t(c.baseline_gap), 0));
  c.last_unaccounted = unaccounted;
  if (unaccounted > c.max_unaccounted) {
    c.max_unaccounted = unaccounted;
    c.max_ts_ns = e.ts_ns;
    c.used_then = used;
    c.seen_then = seen;
  }
}

uint64_t MemoryTracker::pool_reserved_on(int device) const {
  uint64_t reserved = 0;
  if (auto it = pool_reserved_.find(device); it != pool_reserved_.end()) {
    for (const auto& [pool, bytes] : it->second) reserved += bytes;
  }
  return reserved;
}

void MemoryTracker::on_pool_sample(const reader::Event& e, const ApiView& v) {
  constexpr uint64_t kReservedMemCurrent = 0x5;  // cudaMemPoolAttrReservedMemCurrent
  if (field(e, v.attr) != kReservedMemCurrent) return;
  pool_reserved_[e.device][field(e, v.pool)] = field(e, v.value);
  if (auto it = pool_oom_.find(e.device); it != pool_oom_.end() && it->second < ooms_.size()) {
    ooms_[it->second].pool_reserved = pool_reserved_on(e.device);
  }
}

void MemoryTracker::on_oom_report(const reader::Event& e, const ApiView& v) {
  // The framework gave up on a request: the failure its error names is this thread's latest
  // failed allocation (a page of a mapping, under expandable segments), or none at all.
  uint64_t request = torch_allocation_size(field(e, v.size));
  uint64_t allocated = field(e, v.allocated), reserved = field(e, v.reserved);
  auto last = last_oom_of_thread_.find(e.tid);
  if (last != last_oom_of_thread_.end()) {
    OomEvent& o = ooms_[last->second];
    o.framework_request = request;
    o.framework_allocated = allocated;
    o.framework_reserved = reserved;
    o.requested = request;
    // The request's own pages are not what stood in its way.
    o.live -= std::min(o.live, o.partial);
    auto own = o.live_by_owner.find(o.owner);
    if (own != o.live_by_owner.end()) own->second -= std::min(own->second, o.partial);
    o.raised = true;
    o.retried_ok = false;
    last_oom_of_thread_.erase(last);  // the request's story ends with the error raised
    return;
  }
  OomEvent o;
  o.ts_ns = e.ts_ns;
  o.tid = e.tid;
  o.device = e.device;
  o.api = "torch.OutOfMemoryError without a failed allocation call";
  o.requested = request;
  o.framework_request = request;
  o.framework_allocated = allocated;
  o.framework_reserved = reserved;
  o.raised = true;
  o.stack = e.stack;
  describe_live(o);
  o.event_index = events_;
  ooms_.push_back(std::move(o));
}

void MemoryTracker::finish(ProcessFacts& f) {
  for (auto& oom : ooms_) oom.calls_after = events_ - oom.event_index;
  const Churn& steady = warmup_.second_pass_ns() ? after_second_pass_ : after_fraction_;
  f.steady_allocs = steady.allocs;
  f.steady_frees = steady.frees;
  f.steady_alloc_ns = steady.ns;
  f.steady_alloc_bytes = steady.bytes;
  f.steady_alloc_stacks = steady.stacks;
  f.churn_call_ts = std::move(churn_ts_);
  f.churn_calls = std::move(churn_calls_);
  f.retry_frees = retry_frees_;
  f.plain_allocs = plain_allocs_;
  f.physical_allocs = physical_allocs_;
  f.pooled_allocs = pooled_allocs_;
  for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    auto it = trace_.process().environment.find(name);
    if (it != trace_.process().environment.end() && f.alloc_conf.empty()) f.alloc_conf = it->second;
  }
  for (auto& [d, m] : memory_) {
    auto it = trace_.devices().find(d);
    if (it != trace_.devices().end()) m.total_mem = it->second.total_mem;
    for (const auto& [site, bytes] : peak_sites_[d]) {
      const reader::Api* api = trace_.api(site.first);
      if (bytes == 0 || api == nullptr) continue;
      uint64_t caller = (site.second & kHandleTag) ? 0 : site.second;
      reader::StackId stack((site.second & kHandleTag) ? uint32_t(site.second) : 0);
      m.live_by_owner[owner_of(trace_, *api, caller, stack)] += bytes;
    }
  }
  f.memory = std::move(memory_);
  f.coverage = std::move(coverage_);
  f.ooms = std::move(ooms_);
}

}  // namespace cuprobe::analysis
