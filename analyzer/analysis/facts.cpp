// The per-process pass; see facts.h.
#include "analysis/facts.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <regex>
#include <unordered_map>

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
};

uint64_t field(const reader::Event& e, int i) { return i >= 0 && i < e.nargs ? e.args[i] : 0; }

}  // namespace

std::string human_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", double(n) / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(n) / double(1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.1f} KiB", double(n) / double(1ull << 10));
  return fmt::format("{} B", n);
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
    v.ptr = a.field_index("ptr");
    v.size = a.field_index("size");
    v.problem = a.field_index("problem");
    v.problem_hash = a.field_index("problem_hash");
    v.engine = a.field_index("engine");
    v.knobs = a.field_index("knobs");
    v.algo = a.field_index("algo");
    v.align = a.field_index("align");
    v.notes = a.field_index("notes");
  }
  std::vector<uint64_t> calls(apis.size() + 1, 0), time(apis.size() + 1, 0);

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
  };
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
  };
  std::vector<Failure> failures;

  std::unordered_map<uint64_t, Allocation> live;
  std::deque<std::pair<uint64_t, uint64_t>> recent_frees;  // (ts, bytes) in the last second
  std::map<int, uint64_t> device_calls;
  uint64_t first = UINT64_MAX, last = 0;
  // The span is known before the pass for binary traces (the reader found the last call).
  uint64_t span_end = trace.last_event_ns();
  bool warmup_known = false;

  trace.for_each_event([&](const reader::Event& e) {
    const ApiView& v = views[e.api < views.size() ? e.api : 0];
    ++f.events;
    if (e.api < calls.size()) {
      ++calls[e.api];
      time[e.api] += e.dur_ns;
    }
    if (first == UINT64_MAX) {
      first = e.ts_ns;
      if (span_end > first) {
        f.warmup_end_ns = first + uint64_t(double(span_end - first) * options.warmup_fraction);
        warmup_known = true;
      }
    }
    last = std::max(last, e.ts_ns + e.dur_ns);
    if (e.device >= 0) ++device_calls[e.device];
    tracker.on_event(e);
    const std::string* selecting = tracker.selecting(e.tid);

    bool steady = warmup_known && e.ts_ns >= f.warmup_end_ns;
    if (v.flags & trace::kApiDeviceAlloc) {
      DeviceMemory& m = f.memory[e.device];
      m.device = e.device;
      uint64_t size = field(e, v.size);
      if (steady) {
        ++f.steady_allocs;
        f.steady_alloc_ns += e.dur_ns;
        f.steady_alloc_bytes += size;
      }
      if (e.ret == 0) {
        Allocation a;
        a.ptr = field(e, v.ptr);
        a.size = size;
        a.ts_ns = e.ts_ns;
        a.tid = e.tid;
        a.api = v.api->name;
        a.purpose = selecting ? "workspace while cuDNN chose a plan for " + *selecting
                    : (size % (2u << 20)) == 0 ? "caching-allocator segment"
                                               : "allocation";
        m.allocated += size;
        ++m.allocations;
        m.live += size;
        m.peak = std::max(m.peak, m.live);
        live[a.ptr] = std::move(a);
        for (size_t k = f.ooms.size(); k > 0 && k + 8 > f.ooms.size(); --k) {
          OomEvent& oom = f.ooms[k - 1];
          if (!oom.retried_ok && oom.device == e.device && size >= oom.requested) oom.retried_ok = true;
        }
      } else if (e.ret == kCudaOom) {
        OomEvent o;
        o.ts_ns = e.ts_ns;
        o.tid = e.tid;
        o.device = e.device;
        o.api = v.api->name;
        o.requested = size;
        o.ret = e.ret;
        o.live = m.live;
        o.peak = m.peak;
        std::vector<const Allocation*> on_device;
        for (const auto& [ptr, a] : live) on_device.push_back(&a);
        std::partial_sort(on_device.begin(), on_device.begin() + std::min(kLargest, on_device.size()), on_device.end(),
                          [](const Allocation* x, const Allocation* y) { return x->size > y->size; });
        for (size_t k = 0; k < std::min(kLargest, on_device.size()); ++k) o.largest.push_back(*on_device[k]);
        while (!recent_frees.empty() && recent_frees.front().first + 1000000000ull < e.ts_ns) recent_frees.pop_front();
        for (const auto& fr : recent_frees) {
          o.freed_before += fr.second;
          ++o.frees_before;
        }
        if (selecting) o.search_problem = *selecting;
        o.event_index = f.events;
        f.ooms.push_back(std::move(o));
      }
    } else if ((v.flags & trace::kApiDeviceFree) && e.ret == 0) {
      if (steady) {
        ++f.steady_frees;
        f.steady_alloc_ns += e.dur_ns;
      }
      auto it = live.find(field(e, v.ptr));
      if (it != live.end()) {
        DeviceMemory& m = f.memory[e.device];
        m.live -= std::min(m.live, it->second.size);
        recent_frees.emplace_back(e.ts_ns, it->second.size);
        if (recent_frees.size() > 4096) recent_frees.pop_front();
        live.erase(it);
      }
    } else if (v.flags & trace::kApiSync) {
      if (selecting == nullptr) f.sync_ns[v.api->name] += e.dur_ns;  // a search's syncs are its cost
      ++f.sync_calls;
    }

    if (v.cudnn && e.ret != 0) {
      failures.push_back(Failure{e.api, field(e, v.problem_hash), uint32_t(field(e, v.problem)), e.ret, e.ts_ns, e.tid,
                                 uint32_t(field(e, v.align))});
    }
    if ((v.backend_execute || v.legacy_exec) && e.ret == 0) {
      uint64_t hash = field(e, v.problem_hash);
      if (!v.backend_execute || !tracker.in_episode(e.tid, hash)) {
        int64_t engine = v.backend_execute ? int64_t(field(e, v.engine)) : int64_t(field(e, v.algo));
        use(hash, trace.string(uint32_t(field(e, v.problem))), engine,
            v.backend_execute ? trace.string(uint32_t(field(e, v.knobs))) : "", v.backend_execute, e.ts_ns, e.ts_ns, 1);
      }
    }
    if (f.last_calls.size() == kLastCalls) f.last_calls.erase(f.last_calls.begin());
    f.last_calls.push_back(fmt::format("{} ret={} tid={}", v.api ? v.api->name : "?", e.ret, e.tid));
  });
  tracker.finish();

  for (auto& oom : f.ooms) oom.calls_after = f.events - oom.event_index;
  f.first_ns = first == UINT64_MAX ? 0 : first;
  f.last_ns = last;
  if (!warmup_known && last > f.first_ns) {
    f.warmup_end_ns = f.first_ns + uint64_t(double(last - f.first_ns) * options.warmup_fraction);
  }
  for (size_t id = 0; id < apis.size(); ++id) {
    if (calls[id]) {
      f.calls_by_api[apis[id].name] += calls[id];
      f.time_by_api[apis[id].name] += time[id];
    }
  }
  for (const auto& c : trace.counts()) f.calls_by_api[trace.api_name(c.api)] += c.calls;
  for (auto& [d, m] : f.memory) {
    auto it = trace.devices().find(d);
    if (it != trace.devices().end()) m.total_mem = it->second.total_mem;
  }
  uint64_t most = 0;
  for (const auto& [d, n] : device_calls) {
    if (n > most) {
      most = n;
      f.device = d;
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
    ++c.count;
    c.last_ns = x.ts;
    if (x.align && (c.align == 0 || x.align < c.align)) c.align = x.align;
  }
  for (auto& [k, v] : agg) f.cudnn_failures.push_back(std::move(v));

  return f;
}

}  // namespace cuprobe::analysis
