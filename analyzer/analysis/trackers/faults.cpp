// Injected faults and what followed; see faults.h.
#include "analysis/trackers/faults.h"

#include <algorithm>
#include <map>

#include "analysis/problem_access.h"
#include "faults/plan_builder.h"

namespace cuprobe::analysis {

FaultTracker::FaultTracker(const reader::Trace& trace) : trace_(trace), active_(!trace.fault_rules().empty()) {
  const auto& apis = trace.apis();
  for (size_t id = 0; id < apis.size(); ++id) {
    if (apis[id].name == "ncclCommAbort") abort_api_ = int(id);
  }
  for (const reader::FaultRule& r : trace.fault_rules()) {
    if (!r.is_mem_cap() && faults::rule_is_delay(r.text)) delay_rules_.insert(r.index);
  }
}

void FaultTracker::follow(const reader::Event& e, const ApiView& v) {
  auto it = pending_.find(e.tid);
  if (it != pending_.end()) {
    auto& list = it->second;
    for (size_t i = 0; i < list.size();) {
      if (resolve(list[i], e, v)) list.erase(list.begin() + long(i));
      else ++i;
    }
    if (list.empty()) pending_.erase(it);
  }
  if (!e.injected()) return;
  InjectedFault x;
  x.rule = e.fault_rule;
  x.api = v.api ? v.api->name : trace_.api_name(e.api);
  x.ts_ns = e.ts_ns;
  x.tid = e.tid;
  x.k = e.fault_k;
  x.ret = e.ret;
  if (names_problem(v)) x.problem = problem_text_of(trace_, e, v);
  // A call held on purpose that then ran as usual failed nothing: there is no reaction to follow.
  if (e.ret == 0 && delay_rules_.count(e.fault_rule)) {
    x.outcome = "went on after the held call";
    x.next_ok = true;
    injected_.push_back(std::move(x));
    return;
  }
  Pending p;
  p.index = injected_.size();
  p.view = &v;
  p.size = field(e, v.size);
  p.plan = field(e, v.backend_execute ? v.plan : v.desc);
  p.hash = problem_hash_of(trace_, e, v);
  p.algo = v.algo >= 0 ? int64_t(field(e, v.algo)) : -1;
  injected_.push_back(std::move(x));
  pending_[e.tid].push_back(p);
}

bool FaultTracker::done(const Pending& p, const reader::Event& e, const char* outcome) {
  injected_[p.index].outcome = outcome;
  injected_[p.index].next_ok = e.ret == 0;
  return true;
}

bool FaultTracker::resolve(Pending& p, const reader::Event& e, const ApiView& v) {
  const ApiView& f = *p.view;
  constexpr uint64_t kAllocs = trace::kApiDeviceAlloc | trace::kApiHostAlloc;
  constexpr uint64_t kFrees = trace::kApiDeviceFree | trace::kApiHostFree;
  if (f.flags & kAllocs) {
    if ((v.flags & kFrees) && e.ret == 0) ++p.frees;
    if (!(v.flags & kAllocs)) return false;
    uint64_t size = field(e, v.size);
    if (size == p.size) return done(p, e, p.frees ? "freed memory and retried" : "retried the same call");
    // Asking for a good part of it (PyTorch halves a cuDNN workspace request) is a retry; much
    // less is the application going on after giving up on that request.
    if (size < p.size && size >= p.size / 4) return done(p, e, "retried with a smaller size");
    return done(p, e, "went on to other work");
  }
  if (f.backend_execute || f.finalize) {
    if (!v.backend_execute && !v.finalize) return false;
    uint64_t id = field(e, v.backend_execute ? v.plan : v.desc);
    uint64_t hash = problem_hash_of(trace_, e, v);
    if (v.api == f.api && id == p.plan) return done(p, e, "retried the same call");
    if (hash == 0) return false;  // a descriptor that is not a plan: wait for one
    return done(p, e, hash == p.hash ? "moved to another plan" : "went on to other work");
  }
  if (v.api != f.api) return false;
  if (p.algo >= 0 && v.algo >= 0 && int64_t(field(e, v.algo)) != p.algo) return done(p, e, "moved to another algorithm");
  return done(p, e, "retried the same call");
}

void FaultTracker::finish(ProcessFacts& f) {
  f.nccl_abort_ns = abort_ns_;
  // What is still pending: no call of its kind followed on that thread.
  for (auto& [tid, list] : pending_) {
    for (const Pending& p : list) injected_[p.index].outcome = "stopped";
  }
  pending_.clear();
  f.injected = std::move(injected_);
  for (const reader::FaultRule& r : trace_.fault_rules()) {
    FaultRuleFacts fr;
    fr.index = r.index;
    fr.name = r.name;
    fr.text = r.text;
    fr.mem_cap = r.is_mem_cap();
    fr.matched = r.matched;
    fr.injected = r.injected;
    for (const InjectedFault& x : f.injected) {
      if (x.rule == r.index) ++fr.outcomes[x.outcome];
    }
    if (fr.injected == 0) fr.injected = uint64_t(std::count_if(f.injected.begin(), f.injected.end(),
                                                               [&](const InjectedFault& x) { return x.rule == r.index; }));
    if (fr.mem_cap) {
      std::map<int, uint64_t> totals;
      for (const auto& [d, dev] : trace_.devices()) totals[d] = dev.total_mem;
      f.mem_cap = faults::mem_cap_bytes(r.text, totals);
    }
    f.fault_rules.push_back(std::move(fr));
  }
}

}  // namespace cuprobe::analysis
