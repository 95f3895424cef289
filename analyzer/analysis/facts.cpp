// The per-process pass; see facts.h.
#include "analysis/facts.h"

#include "faults/plan_builder.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>
#include <deque>
#include <regex>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace cuprobe::analysis {

namespace {

constexpr int32_t kCudaOom = 2;  // cudaErrorMemoryAllocation
constexpr size_t kLastCalls = 8;
constexpr size_t kLargest = 5;

// Field positions of one API, resolved once per trace.
struct ApiView {
  const reader::Api* api = nullptr;
  uint32_t flags = 0;
  bool cudnn = false;
  bool backend_execute = false;
  bool finalize = false;
  bool legacy_exec = false;
  int ptr = -1, size = -1, problem = -1, problem_hash = -1, engine = -1, knobs = -1, algo = -1, align = -1, notes = -1;
  int plan = -1, desc = -1;
  int caller = -1, free_bytes = -1, total = -1;
  bool physical = false;  // allocations and frees name a physical memory handle, not an address
};

// Physical handles and addresses are different name spaces: live allocations keep handles
// under this tag so that a handle's value can never release an address.
constexpr uint64_t kHandleTag = 1ull << 63;
uint64_t live_key(const ApiView& v, uint64_t value) { return v.physical ? value | kHandleTag : value; }

uint64_t field(const reader::Event& e, int i) { return i >= 0 && i < e.nargs ? e.args[i] : 0; }

// The view of a call's API; an empty one (no flags, no fields) for an id the trace does not
// describe, so that such calls are counted but take part in nothing else.
const ApiView& view_of(const std::vector<ApiView>& views, uint16_t api) {
  static const ApiView kUnknown;
  return api < views.size() && views[api].api != nullptr ? views[api] : kUnknown;
}

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
  uint32_t stack = 0;
  std::string search_problem;  // only while cuDNN chose a plan (rare)
};

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
  a.purpose = l.during_search ? "workspace while cuDNN chose a plan for " + l.search_problem
              : physical      ? "physical memory mapped into a reserved range"
              : torch_allocator && (l.size % (2u << 20)) == 0 ? "caching-allocator segment"
              : a.owner != "unknown" && !torch_allocator      ? "allocated by " + a.owner
                                                              : "allocation";
  return a;
}

// Owners of the live allocations on `device`, by bytes.
std::map<std::string, uint64_t> live_by_owner(const reader::Trace& trace,
                                              const std::unordered_map<uint64_t, LiveAllocation>& live, int device) {
  std::map<std::pair<uint16_t, std::pair<uint64_t, uint32_t>>, uint64_t> by_site;  // (api, caller, stack) -> bytes
  for (const auto& [key, a] : live) {
    if (a.device == device) by_site[{a.api, {a.caller, a.caller ? 0 : a.stack}}] += a.size;
  }
  std::map<std::string, uint64_t> out;
  for (const auto& [site, bytes] : by_site) {
    const reader::Api* api = trace.api(site.first);
    out[api ? owner_of(trace, *api, site.second.first, site.second.second) : "unknown"] += bytes;
  }
  return out;
}

struct Churn {
  uint64_t allocs = 0, frees = 0, ns = 0, bytes = 0;
  std::vector<uint32_t> stacks;  // of the allocations that have one (the first 4096)
};

struct LastCall {
  uint16_t api = 0;
  int32_t ret = 0;
  uint32_t tid = 0;
};

// Plans seen executing, by (problem hash, engine or algorithm, knob string id): the pass looks
// up executions here without touching strings.
struct PlanKey {
  uint64_t hash;
  int64_t engine;
  uint32_t knobs;
  bool operator==(const PlanKey& o) const { return hash == o.hash && engine == o.engine && knobs == o.knobs; }
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    return std::hash<uint64_t>()(k.hash * 0x9e3779b97f4a7c15ull ^ uint64_t(k.engine) * 31 ^ k.knobs);
  }
};

}  // namespace

uint64_t layer_key(const std::string& problem) {
  std::string key;
  size_t i = 0;
  while (i < problem.size()) {
    size_t open = problem.find('[', i);
    if (open == std::string::npos) {
      key.append(problem, i, std::string::npos);
      break;
    }
    size_t close = problem.find(']', open);
    if (close == std::string::npos) close = problem.size() - 1;
    size_t name = open;
    while (name > i && std::isalpha(static_cast<unsigned char>(problem[name - 1]))) --name;
    std::string_view tensor(problem.data() + name, open - name);
    key.append(problem, i, open - i);
    if (tensor == "w" || tensor == "dw" || tensor == "pad" || tensor == "str" || tensor == "dil") {
      key.append(problem, open, close + 1 - open);
    } else {
      // Batch and spatial sizes change with the input; the channel count is the layer's.
      size_t first = problem.find(',', open);
      size_t second = first < close ? problem.find(',', first + 1) : std::string::npos;
      key += '[';
      if (first < close) key.append(problem, first + 1, std::min(second, close) - first - 1);
      key += ']';
    }
    i = close + 1;
  }
  return std::hash<std::string>()(key) | 1;  // never 0
}

std::string torch_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", double(n) / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.2f} MiB", double(n) / double(1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.2f} KiB", double(n) / double(1ull << 10));
  return fmt::format("{} bytes", n);
}

uint64_t torch_allocation_size(uint64_t rounded) {
  constexpr uint64_t kMiB = 1ull << 20;
  if (rounded <= kMiB) return 2 * kMiB;
  if (rounded < 10 * kMiB) return 20 * kMiB;
  return (rounded + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
}

namespace {

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Modules whose frames are the CUDA libraries or cuprobe itself, never an owner.
bool plumbing(const std::string& base) {
  return base.rfind("libcuprobe", 0) == 0 || base.rfind("libcudart", 0) == 0 || base.rfind("libcuda.so", 0) == 0;
}

std::string owner_from_module(const std::string& base, const reader::Api& api) {
  if (base.rfind("libc10_cuda", 0) == 0) {
    if (api.flags & (trace::kApiPhysical | trace::kApiVaReserve)) return "PyTorch caching allocator (expandable segments)";
    if (api.name.rfind("cudaMallocAsync", 0) == 0 || api.name.rfind("cudaMallocFromPool", 0) == 0)
      return "PyTorch (cudaMallocAsync backend)";
    return "PyTorch caching allocator";
  }
  if (base.rfind("libnccl", 0) == 0) return "NCCL";
  if (base.rfind("libcublas", 0) == 0) return "cuBLAS";
  if (base.rfind("libcudnn", 0) == 0) return "cuDNN";
  if (base.rfind("libtorch", 0) == 0) return "PyTorch";
  return base;
}

}  // namespace

std::string owners_text(const std::map<std::string, uint64_t>& bytes_by_owner) {
  std::vector<std::pair<uint64_t, std::string>> owners;
  for (const auto& [owner, bytes] : bytes_by_owner) {
    if (bytes != 0) owners.emplace_back(bytes, owner);
  }
  std::sort(owners.rbegin(), owners.rend());
  std::string text;
  for (const auto& [bytes, owner] : owners) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", owner, human_bytes(bytes));
  return text;
}

std::string owner_of(const reader::Trace& trace, const reader::Api& api, uint64_t caller, uint32_t stack) {
  if (caller != 0) {
    if (const reader::Module* m = trace.module_of(caller)) {
      std::string base = base_name(m->path);
      if (!plumbing(base)) return owner_from_module(base, api);
    }
  }
  if (const reader::Stack* st = stack ? trace.stack(stack) : nullptr) {
    for (uint64_t pc : st->pcs) {
      const reader::Module* m = trace.module_of(pc);
      if (m == nullptr) continue;
      std::string base = base_name(m->path);
      if (!plumbing(base)) return owner_from_module(base, api);
    }
  }
  return "unknown";
}

ProblemShape parse_problem(const std::string& problem) {
  ProblemShape s;
  size_t space = problem.find(' ');
  s.op = problem.substr(0, space);
  size_t open = problem.find('[', space == std::string::npos ? 0 : space);
  size_t close = open == std::string::npos ? open : problem.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return s;
  std::string dims = problem.substr(open + 1, close - open - 1);
  size_t start = 0;
  while (start < dims.size()) {
    size_t comma = dims.find(',', start);
    if (comma == std::string::npos) comma = dims.size();
    s.dims.push_back(std::strtoll(dims.c_str() + start, nullptr, 10));
    start = comma + 1;
  }
  size_t end = problem.find(' ', close);
  s.dtype = problem.substr(close + 1, end == std::string::npos ? std::string::npos : end - close - 1);
  return s;
}

// What the application did after each injected fault, learned from the next calls of the same
// thread: a retry of the same call (after freeing memory, or asking for less), a move to another
// cuDNN plan or algorithm for the same problem, other work, or nothing of the kind again.
class FaultFollower {
 public:
  FaultFollower(const reader::Trace& trace, const std::vector<ApiView>& views, std::vector<InjectedFault>& out)
      : trace_(trace), views_(views), out_(out) {}

  void on_event(const reader::Event& e) {
    const ApiView& v = view_of(views_, e.api);
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
    if (v.problem >= 0) x.problem = trace_.string(uint32_t(field(e, v.problem)));
    Pending p;
    p.index = out_.size();
    p.api = e.api;
    p.size = field(e, v.size);
    p.plan = field(e, v.backend_execute ? v.plan : v.desc);
    p.hash = field(e, v.problem_hash);
    p.algo = v.algo >= 0 ? int64_t(field(e, v.algo)) : -1;
    out_.push_back(std::move(x));
    pending_[e.tid].push_back(p);
  }

  void finish() {
    for (auto& [tid, list] : pending_) {
      for (const Pending& p : list) out_[p.index].outcome = "stopped";
    }
    pending_.clear();
  }

 private:
  struct Pending {
    size_t index;
    uint16_t api;
    uint64_t size;
    uint64_t plan;  // plan id (execute) or descriptor id (finalize)
    uint64_t hash;
    int64_t algo;
    int frees = 0;
  };

  bool done(const Pending& p, const reader::Event& e, const char* outcome) {
    out_[p.index].outcome = outcome;
    out_[p.index].next_ok = e.ret == 0;
    return true;
  }

  bool resolve(Pending& p, const reader::Event& e, const ApiView& v) {
    const ApiView& f = view_of(views_, p.api);
    constexpr uint32_t kAllocs = trace::kApiDeviceAlloc | trace::kApiHostAlloc;
    constexpr uint32_t kFrees = trace::kApiDeviceFree | trace::kApiHostFree;
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
      uint64_t hash = field(e, v.problem_hash);
      if (v.api == f.api && id == p.plan) return done(p, e, "retried the same call");
      if (hash == 0) return false;  // a descriptor that is not a plan: wait for one
      return done(p, e, hash == p.hash ? "moved to another plan" : "went on to other work");
    }
    if (v.api != f.api) return false;
    if (p.algo >= 0 && v.algo >= 0 && int64_t(field(e, v.algo)) != p.algo) return done(p, e, "moved to another algorithm");
    return done(p, e, "retried the same call");
  }

  const reader::Trace& trace_;
  const std::vector<ApiView>& views_;
  std::vector<InjectedFault>& out_;
  std::unordered_map<uint32_t, std::vector<Pending>> pending_;
};

ProcessFacts gather_facts(const reader::Trace& trace, const FactOptions& options) {
  ProcessFacts f;
  f.trace = &trace;
  f.pid = trace.pid();
  f.host = trace.process().hostname;
  f.rank = trace.process().rank;

  const auto& apis = trace.apis();
  std::vector<ApiView> views(apis.size());
  for (size_t id = 0; id < apis.size(); ++id) {
    const reader::Api& a = apis[id];
    ApiView& v = views[id];
    v.api = &a;
    v.flags = a.flags;
    v.cudnn = a.library == trace::Library::kCudnn;
    v.backend_execute = a.name == "cudnnBackendExecute";
    v.finalize = a.name == "cudnnBackendFinalize";
    v.legacy_exec = (a.flags & trace::kApiCudnnExec) && a.name.rfind("cudnnConvolution", 0) == 0;
    v.physical = (a.flags & trace::kApiPhysical) != 0;
    v.ptr = a.field_index("ptr");
    if (v.ptr < 0) v.ptr = a.field_index("handle");
    v.caller = a.field_index("caller");
    v.free_bytes = a.field_index("free");
    v.total = a.field_index("total");
    v.size = a.field_index("size");
    v.problem = a.field_index("problem");
    v.problem_hash = a.field_index("problem_hash");
    v.engine = a.field_index("engine");
    v.knobs = a.field_index("knobs");
    v.algo = a.field_index("algo");
    v.align = a.field_index("align");
    v.notes = a.field_index("notes");
    v.plan = a.field_index("plan");
    v.desc = a.field_index("desc");
  }
  std::vector<uint64_t> calls(apis.size() + 1, 0), time(apis.size() + 1, 0), sync_time(apis.size() + 1, 0);

  // A plan a problem runs with is a "use" once its selection is over: executions during a
  // search are candidates. A heuristic selection's winner keeps running while its episode is
  // open (until the thread turns to another problem), so its runs are counted when it closes.
  auto use = [&](uint64_t hash, const std::string& problem, int64_t engine, const std::string& knobs, bool backend,
                 uint64_t first_ns, uint64_t last_ns, uint64_t executions) {
    ProblemUse& p = f.problems[hash];
    if (p.problem.empty()) {
      p.hash = hash;
      p.problem = problem;
    }
    auto it = std::find_if(p.plans.begin(), p.plans.end(),
                           [&](const PlanUse& u) { return u.engine == engine && u.knobs == knobs; });
    if (it == p.plans.end()) {
      PlanUse u;
      u.engine = engine;
      u.knobs = knobs;
      u.plan = backend ? fmt::format("engine {} [{}]", engine, knobs) : fmt::format("algo {}", engine);
      u.first_ns = first_ns;
      p.plans.push_back(u);
      it = p.plans.end() - 1;
    }
    it->first_ns = std::min(it->first_ns, first_ns);
    it->last_ns = std::max(it->last_ns, last_ns);
    it->executions += executions;
    return std::make_pair(&p, size_t(it - p.plans.begin()));
  };
  std::unordered_map<PlanKey, std::pair<ProblemUse*, size_t>, PlanKeyHash> plan_index;
  reader::SearchTracker tracker(trace, [&](const reader::SearchRecord& r) {
    f.searches.push_back(r);
    if (r.mode == "heuristic" && r.api == "backend" && r.winner >= 0) {
      const auto& w = r.candidates[size_t(r.winner)];
      use(r.problem_hash, r.problem, w.engine, w.knobs, true, r.end_ns, w.last_exec_ns, uint64_t(w.executions));
    }
  });

  struct Failure {
    uint16_t api;
    uint64_t problem_hash;
    uint32_t problem_sid;
    int32_t status;
    uint64_t ts;
    uint32_t tid;
    uint32_t align;
    uint32_t stack;
  };
  std::vector<Failure> failures;

  std::unordered_map<uint64_t, LiveAllocation> live;
  // Live bytes per device and allocation site (API, calling module address or stack), and their
  // split at the device's peak: owners are named once, at the end.
  using Site = std::pair<uint16_t, uint64_t>;
  std::map<int, std::map<Site, uint64_t>> site_live, peak_sites;
  // Physical pages each thread created since its last mapping: the pieces of a request in progress.
  std::unordered_map<uint32_t, uint64_t> pending_pages;
  auto describe_live = [&](OomEvent& o) {
    const DeviceMemory& m = f.memory[o.device];
    o.live = m.live;
    o.peak = m.peak;
    std::vector<std::pair<uint64_t, const LiveAllocation*>> on_device;
    for (const auto& [key, a] : live) {
      if (a.device == o.device) on_device.emplace_back(key & ~kHandleTag, &a);
    }
    size_t n = std::min(kLargest, on_device.size());
    std::partial_sort(on_device.begin(), on_device.begin() + ptrdiff_t(n), on_device.end(),
                      [](const auto& x, const auto& y) { return x.second->size > y.second->size; });
    for (size_t k = 0; k < n; ++k) o.largest.push_back(describe(trace, on_device[k].first, *on_device[k].second));
    o.live_by_owner = live_by_owner(trace, live, o.device);
  };
  // Out-of-memory bookkeeping: each thread's latest failure until its next allocation, and the
  // failures not yet followed by successful work.
  std::unordered_map<uint32_t, size_t> last_oom_of_thread;
  size_t continued_upto = 0;
  auto mark_continued = [&] {
    for (; continued_upto < f.ooms.size(); ++continued_upto) f.ooms[continued_upto].continued = true;
  };
  LastCall last_calls[kLastCalls];
  std::unordered_map<uint64_t, uint64_t> layer_of;  // problem hash -> layer_key, for second_pass_ns
  uint64_t first_layer = 0;
  bool other_layer_ran = false;
  uint64_t last_call_count = 0;
  std::deque<std::pair<uint64_t, uint64_t>> recent_frees;  // (ts, bytes) in the last second
  std::vector<uint64_t> device_calls;  // by device ordinal
  uint64_t first = UINT64_MAX, last = 0;
  // The span is known before the pass for binary traces (the reader found the last call).
  uint64_t span_end = trace.last_event_ns();
  bool warmup_known = false;
  uint64_t fraction_end = 0;
  Churn after_fraction, after_second_pass;
  FaultFollower faults(trace, views, f.injected);

  trace.for_each_event([&](const reader::Event& e) {
    if (!trace.fault_rules().empty()) faults.on_event(e);
    const ApiView& v = view_of(views, e.api);
    ++f.events;
    if (e.api < calls.size()) {
      ++calls[e.api];
      time[e.api] += e.dur_ns;
    }
    if (first == UINT64_MAX) {
      first = e.ts_ns;
      if (span_end > first) {
        fraction_end = first + uint64_t(double(span_end - first) * options.warmup_fraction);
        warmup_known = true;
      }
    }
    last = std::max(last, e.ts_ns + e.dur_ns);
    if (e.device >= 0) {
      if (size_t(e.device) >= device_calls.size()) device_calls.resize(size_t(e.device) + 1, 0);
      ++device_calls[size_t(e.device)];
    }
    tracker.on_event(e);
    const std::string* selecting = tracker.selecting(e.tid);

    // Allocation churn is counted from both possible ends of warm-up; which one holds is known
    // at the end of the pass.
    Churn* churn[2] = {warmup_known && e.ts_ns >= fraction_end ? &after_fraction : nullptr,
                       f.second_pass_ns && e.ts_ns >= f.second_pass_ns ? &after_second_pass : nullptr};
    if (v.flags & trace::kApiDeviceAlloc) {
      DeviceMemory& m = f.memory[e.device];
      m.device = e.device;
      uint64_t size = field(e, v.size);
      // Churn is memory taken and given back in the steady state; failed calls and the caching
      // allocator's flush after an out-of-memory failure are the out-of-memory story instead.
      bool flushing = last_oom_of_thread.count(e.tid) != 0;
      // A pool's allocations are cheap by design (memory stays in the pool): never churn.
      bool pooled = (v.flags & trace::kApiPooled) != 0;
      for (Churn* c : churn) {
        if (c && e.ret == 0 && !flushing && !pooled) {
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
        m.allocated += size;
        ++m.allocations;
        m.live += size;
        if (v.physical) {
          m.physical_live += size;
          m.physical_peak = std::max(m.physical_peak, m.physical_live);
        }
        if (pooled) {
          m.pooled_live += size;
          m.pooled_peak = std::max(m.pooled_peak, m.pooled_live);
        }
        if (v.physical) pending_pages[e.tid] += size;
        Site site{e.api, a.caller ? a.caller : uint64_t(a.stack) | kHandleTag};
        site_live[e.device][site] += size;
        if (m.live > m.peak) {
          m.peak = m.live;
          peak_sites[e.device] = site_live[e.device];
        }
        live[live_key(v, field(e, v.ptr))] = std::move(a);
        // A physical page is a piece of a request (a mapping is made of them): whether the request
        // got its memory is known when it is mapped, not when one more page could be had.
        auto last = v.physical ? last_oom_of_thread.end() : last_oom_of_thread.find(e.tid);
        if (last != last_oom_of_thread.end()) {
          OomEvent& oom = f.ooms[last->second];
          if (oom.requested == size && oom.device == e.device) oom.retried_ok = true;
          last_oom_of_thread.erase(last);
        }
        mark_continued();
      } else if (e.ret == kCudaOom) {
        // A pool that failed to grow by `size` may keep what it got before failing (seen on an
        // H200: 19 GiB of a 30 GiB cudaMallocAsync stayed in the pool).
        if (pooled) m.pooled_peak = std::max(m.pooled_peak, m.pooled_live + size);
        OomEvent o;
        o.ts_ns = e.ts_ns;
        o.tid = e.tid;
        o.device = e.device;
        o.api = v.api->name;
        o.requested = size;
        o.failed_call_size = size;
        if (v.physical) o.partial = std::exchange(pending_pages[e.tid], 0);
        o.owner = owner_of(trace, *v.api, field(e, v.caller), e.stack);
        o.ret = e.ret;
        o.stack = e.stack;
        describe_live(o);
        while (!recent_frees.empty() && recent_frees.front().first + 1000000000ull < e.ts_ns) recent_frees.pop_front();
        for (const auto& fr : recent_frees) {
          o.freed_before += fr.second;
          ++o.frees_before;
        }
        if (selecting) o.search_problem = *selecting;
        if (e.injected()) {
          const reader::FaultRule* r = trace.fault_rule(e.fault_rule);
          o.injected_by = r ? r->name : fmt::format("rule{}", e.fault_rule + 1);
        }
        o.event_index = f.events;
        auto last = last_oom_of_thread.find(e.tid);
        if (last != last_oom_of_thread.end()) {
          const OomEvent& prev = f.ooms[last->second];
          o.is_retry = prev.requested == size && prev.device == e.device && !prev.is_retry;
        }
        last_oom_of_thread[e.tid] = f.ooms.size();
        f.ooms.push_back(std::move(o));
      }
    } else if ((v.flags & trace::kApiDeviceFree) && e.ret == 0) {
      bool flushing = last_oom_of_thread.count(e.tid) != 0;
      bool pooled = (v.flags & trace::kApiPooled) != 0;
      for (Churn* c : churn) {
        if (c && !flushing && !pooled) {
          ++c->frees;
          c->ns += e.dur_ns;
        }
      }
      auto it = live.find(live_key(v, field(e, v.ptr)));
      if (it != live.end()) {
        const LiveAllocation& a = it->second;
        DeviceMemory& m = f.memory[a.device];
        m.live -= std::min(m.live, a.size);
        if (v.physical) m.physical_live -= std::min(m.physical_live, a.size);
        if (pooled) m.pooled_live -= std::min(m.pooled_live, a.size);
        uint64_t& at_site = site_live[a.device][Site{a.api, a.caller ? a.caller : uint64_t(a.stack) | kHandleTag}];
        at_site -= std::min(at_site, a.size);
        recent_frees.emplace_back(e.ts_ns, a.size);
        if (recent_frees.size() > 4096) recent_frees.pop_front();
        live.erase(it);
      }
    } else if ((v.flags & (trace::kApiVaReserve | trace::kApiVaFree | trace::kApiMap | trace::kApiUnmap)) &&
               e.ret == 0) {
      DeviceMemory& m = f.memory[e.device];
      m.device = e.device;
      uint64_t size = field(e, v.size);
      if (v.flags & trace::kApiVaReserve) {
        m.reserved += size;
        m.reserved_peak = std::max(m.reserved_peak, m.reserved);
      } else if (v.flags & trace::kApiVaFree) {
        m.reserved -= std::min(m.reserved, size);
      } else if (v.flags & trace::kApiMap) {
        m.mapped += size;
        pending_pages.erase(e.tid);
        // The pages of a request are mapped once all of them could be created: a request that
        // failed for want of a page and is mapped now got its memory on a retry.
        auto last = last_oom_of_thread.find(e.tid);
        if (last != last_oom_of_thread.end()) {
          OomEvent& oom = f.ooms[last->second];
          if (oom.device == e.device && oom.framework_request == 0) oom.retried_ok = true;
          last_oom_of_thread.erase(last);
        }
      } else {
        m.mapped -= std::min(m.mapped, size);
      }
    } else if ((v.flags & trace::kApiMemInfo) && e.sample && e.ret == 0 && e.device >= 0) {
      // The device's own account against what cuprobe saw; the first sample is the baseline
      // (the context, and whatever else was on the device before this process allocated).
      uint64_t total = field(e, v.total), free_bytes = field(e, v.free_bytes);
      if (total != 0 && free_bytes <= total) {
        MemoryCoverage& c = f.coverage[e.device];
        c.device = e.device;
        c.total = total;
        uint64_t used = total - free_bytes;
        const DeviceMemory& m = f.memory[e.device];
        uint64_t seen = m.live - std::min(m.live, m.pooled_live) + m.pooled_peak;
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
    } else if (v.flags & trace::kApiOomReport) {
      // The framework gave up on a request: the failure its error names is this thread's latest
      // failed allocation (a page of a mapping, under expandable segments), or none at all.
      uint64_t request = torch_allocation_size(field(e, v.size));
      auto last = last_oom_of_thread.find(e.tid);
      if (last != last_oom_of_thread.end()) {
        OomEvent& o = f.ooms[last->second];
        o.framework_request = request;
        o.requested = request;
        // The request's own pages are not what stood in its way.
        o.live -= std::min(o.live, o.partial);
        auto own = o.live_by_owner.find(o.owner);
        if (own != o.live_by_owner.end()) own->second -= std::min(own->second, o.partial);
        o.raised = true;
        o.retried_ok = false;
        last_oom_of_thread.erase(last);  // the request's story ends with the error raised
      } else {
        OomEvent o;
        o.ts_ns = e.ts_ns;
        o.tid = e.tid;
        o.device = e.device;
        o.api = "torch.OutOfMemoryError without a failed allocation call";
        o.requested = request;
        o.framework_request = request;
        o.raised = true;
        o.stack = e.stack;
        describe_live(o);
        o.event_index = f.events;
        f.ooms.push_back(std::move(o));
      }
    } else if (v.flags & trace::kApiSync) {
      if (selecting == nullptr && e.api < sync_time.size()) sync_time[e.api] += e.dur_ns;  // a search's syncs are its cost
      ++f.sync_calls;
    }

    // Injected failures are the fault summary's, not cuDNN's: they stay out of unsupported-config.
    if (v.cudnn && e.ret != 0 && !e.injected()) {
      failures.push_back(Failure{e.api, field(e, v.problem_hash), uint32_t(field(e, v.problem)), e.ret, e.ts_ns, e.tid,
                                 uint32_t(field(e, v.align)), e.stack});
    }
    if ((v.backend_execute || v.legacy_exec) && e.ret == 0) {
      if (continued_upto < f.ooms.size()) mark_continued();
      uint64_t hash = field(e, v.problem_hash);
      if (!v.backend_execute || !tracker.in_episode(e.tid, hash)) {
        if (hash != 0 && f.second_pass_ns == 0) {
          auto known_layer = layer_of.find(hash);
          if (known_layer == layer_of.end()) {
            known_layer = layer_of.emplace(hash, layer_key(trace.string(uint32_t(field(e, v.problem))))).first;
          }
          uint64_t layer = known_layer->second;
          if (first_layer == 0) {
            first_layer = layer;
          } else if (layer != first_layer) {
            other_layer_ran = true;
          } else if (other_layer_ran) {
            f.second_pass_ns = e.ts_ns;
          }
        }
        int64_t engine = v.backend_execute ? int64_t(field(e, v.engine)) : int64_t(field(e, v.algo));
        uint32_t knobs = v.backend_execute ? uint32_t(field(e, v.knobs)) : 0;
        PlanKey key{hash, engine, knobs};
        auto known = plan_index.find(key);
        if (known != plan_index.end()) {
          PlanUse& u = known->second.first->plans[known->second.second];
          u.first_ns = std::min(u.first_ns, e.ts_ns);
          u.last_ns = std::max(u.last_ns, e.ts_ns);
          ++u.executions;
        } else {
          static const std::string kNone;
          plan_index.emplace(key, use(hash, trace.string(uint32_t(field(e, v.problem))), engine,
                                      v.backend_execute ? trace.string(knobs) : kNone, v.backend_execute, e.ts_ns,
                                      e.ts_ns, 1));
        }
      }
    }
    last_calls[last_call_count++ % kLastCalls] = LastCall{e.api, e.ret, e.tid};
  });
  tracker.finish();
  faults.finish();
  for (const reader::FaultRule& r : trace.fault_rules()) {
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
      for (const auto& [d, dev] : trace.devices()) totals[d] = dev.total_mem;
      f.mem_cap = faults::mem_cap_bytes(r.text, totals);
    }
    f.fault_rules.push_back(std::move(fr));
  }
  for (uint64_t k = last_call_count > kLastCalls ? last_call_count - kLastCalls : 0; k < last_call_count; ++k) {
    const LastCall& c = last_calls[k % kLastCalls];
    f.last_calls.push_back(fmt::format("{} ret={} tid={}", trace.api_name(c.api), c.ret, c.tid));
  }

  for (auto& oom : f.ooms) oom.calls_after = f.events - oom.event_index;
  f.first_ns = first == UINT64_MAX ? 0 : first;
  f.last_ns = last;
  if (!warmup_known && last > f.first_ns) {
    fraction_end = f.first_ns + uint64_t(double(last - f.first_ns) * options.warmup_fraction);
  }
  // Warm-up ends where the job starts repeating itself, when that is seen; else after the
  // first part of the run.
  const Churn& steady = f.second_pass_ns ? after_second_pass : after_fraction;
  f.warmup_end_ns = f.second_pass_ns ? f.second_pass_ns : fraction_end;
  f.steady_allocs = steady.allocs;
  f.steady_frees = steady.frees;
  f.steady_alloc_ns = steady.ns;
  f.steady_alloc_bytes = steady.bytes;
  f.steady_alloc_stacks = steady.stacks;
  for (size_t id = 0; id < apis.size(); ++id) {
    if (calls[id]) {
      f.calls_by_api[apis[id].name] += calls[id];
      f.time_by_api[apis[id].name] += time[id];
    }
    if (sync_time[id] || ((apis[id].flags & trace::kApiSync) && calls[id])) f.sync_ns[apis[id].name] += sync_time[id];
  }
  for (const auto& c : trace.counts()) f.calls_by_api[trace.api_name(c.api)] += c.calls;
  for (auto& [d, m] : f.memory) {
    auto it = trace.devices().find(d);
    if (it != trace.devices().end()) m.total_mem = it->second.total_mem;
    for (const auto& [site, bytes] : peak_sites[d]) {
      const reader::Api* api = trace.api(site.first);
      if (bytes == 0 || api == nullptr) continue;
      uint64_t caller = (site.second & kHandleTag) ? 0 : site.second;
      uint32_t stack = (site.second & kHandleTag) ? uint32_t(site.second) : 0;
      m.live_by_owner[owner_of(trace, *api, caller, stack)] += bytes;
    }
  }
  uint64_t most = 0;
  for (size_t d = 0; d < device_calls.size(); ++d) {
    if (device_calls[d] > most) {
      most = device_calls[d];
      f.device = int(d);
    }
  }

  // Failures during a search that went on to a winner were routine plan rejections.
  std::map<std::tuple<std::string, uint64_t, int32_t, bool>, CudnnFailure> agg;
  for (const Failure& x : failures) {
    bool routine = false;
    for (const auto& s : f.searches) {
      if (s.tid == x.tid && s.complete && x.ts >= s.start_ns && x.ts <= s.end_ns) routine = true;
    }
    const std::string& api = trace.api_name(x.api);
    CudnnFailure& c = agg[{api, x.problem_hash, x.status, routine}];
    if (c.count == 0) {
      c.api = api;
      c.problem = trace.string(x.problem_sid);
      c.problem_hash = x.problem_hash;
      c.status = x.status;
      c.routine = routine;
      c.first_ns = x.ts;
      c.align = x.align;
    }
    if (c.stack == 0) c.stack = x.stack;
    ++c.count;
    c.last_ns = x.ts;
    if (x.align && (c.align == 0 || x.align < c.align)) c.align = x.align;
  }
  for (auto& [k, v] : agg) f.cudnn_failures.push_back(std::move(v));

  return f;
}

}  // namespace cuprobe::analysis
