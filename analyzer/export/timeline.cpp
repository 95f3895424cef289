// The job's timeline as typed items; see timeline.h.
#include "export/timeline.h"

#include "export/export.h"

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "analysis/facts.h"
#include "analysis/problem_access.h"
#include "analysis/trackers/api_view.h"
#include "analysis/trackers/memory.h"

namespace cuprobe::exporter {

namespace {

using analysis::ApiView;
using analysis::field;

// cudaErrorNotReady and CUDA_ERROR_NOT_READY: a query's "not yet", not a failure.
constexpr int32_t kNotReady = 600;

// Strings the items point to, kept for the whole process (owners, API names).
class Names {
 public:
  const std::string* get(const std::string& s) { return &*set_.insert(s).first; }

 private:
  std::unordered_set<std::string> set_;
};

// What the timeline keeps of a live block besides its size and device.
struct Live {
  uint64_t ts_ns = 0;
  const std::string* owner = nullptr;
};

class Walker {
 public:
  Walker(const reader::Trace& trace, TimelineSink& sink, const WalkOptions& options, uint64_t done_before,
         uint64_t total)
      : trace_(trace),
        sink_(sink),
        options_(options),
        views_(trace),
        searches_(trace, [this](const reader::SearchRecord& r) { sink_.search(r); }),
        done_before_(done_before),
        total_(total) {}

  void run() {
    info_.trace = &trace_;
    info_.pid = trace_.pid();
    const reader::Process& proc = trace_.process();
    info_.rank = proc.rank;
    if (info_.rank < 0) {
      for (const auto& [key, value] : trace_.properties()) {
        const char* name = reader::property_name(key);
        if (name != nullptr && std::string(name) == "nccl_rank" && value >= 0) info_.rank = int(value);
      }
    }
    info_.host = proc.hostname;
    for (const auto& a : proc.cmdline) info_.command += (info_.command.empty() ? "" : " ") + a;
    if (info_.command.size() > 200) info_.command = info_.command.substr(0, 197) + "...";
    info_.label = info_.rank >= 0 ? fmt::format("rank {} (pid {}) on {}", info_.rank, info_.pid, info_.host)
                                  : fmt::format("pid {} on {}", info_.pid, info_.host);
    sink_.begin_process(info_);
    const bool calls = sink_.wants_calls();
    auto last_report = std::chrono::steady_clock::now();
    trace_.for_each_event([&](const reader::Event& e) {
      on_event(e, calls);
      if (options_.progress && (++since_report_ & 0xffff) == 0) {
        auto now = std::chrono::steady_clock::now();
        if (now - last_report > std::chrono::milliseconds(200)) {
          last_report = now;
          options_.progress(done_before_ + info_.events, total_);
        }
      }
    });
    searches_.finish();
    if (options_.progress) options_.progress(done_before_ + info_.events, total_);
    sink_.end_process(info_);
  }

 private:
  void on_event(const reader::Event& e, bool calls) {
    if (info_.events++ == 0) info_.first_ns = e.ts_ns;
    info_.last_ns = std::max(info_.last_ns, e.ts_ns + e.dur_ns);
    if (seen_tids_.insert(e.tid).second) info_.tids.push_back(e.tid);
    const ApiView& v = views_[e.api];
    searches_.on_event(e);
    if (v.api == nullptr) return;  // an id the trace does not describe
    if (calls) sink_.call(e, *v.api);
    if (e.api >= api_names_.size()) api_names_.resize(size_t(e.api) + 1, nullptr);
    const std::string*& api = api_names_[e.api];
    if (api == nullptr) api = names_.get(v.api->name);
    if (e.injected()) {
      FaultItem f;
      f.tid = e.tid;
      f.ts_ns = e.ts_ns;
      f.api = api;
      f.ret = e.ret;
      const reader::FaultRule* rule = trace_.fault_rule(e.fault_rule);
      f.rule = names_.get(rule ? (rule->is_mem_cap() ? std::string("mem-cap") : rule->name)
                               : fmt::format("rule {}", e.fault_rule));
      f.k = e.fault_k;
      sink_.fault(f);
    }
    analysis::MemoryCall kind = analysis::memory_call(v, e);
    if (kind == analysis::MemoryCall::kAlloc) {
      on_alloc(e, v, api);
    } else if (kind == analysis::MemoryCall::kFree) {
      on_free(e, v, api);
    } else if (v.runs_chosen()) {
      on_run(e, v);
    } else if (v.flags & trace::kApiSync) {
      SyncItem s{e.tid, e.ts_ns, e.dur_ns, e.device, api, e.ret};
      sink_.sync(s);
    } else if (e.ret != 0 && e.ret != kNotReady && !(v.flags & trace::kApiError)) {
      failure(e, v, api);
    }
  }

  void failure(const reader::Event& e, const ApiView& v, const std::string* api) {
    FailureItem f;
    f.tid = e.tid;
    f.ts_ns = e.ts_ns;
    f.dur_ns = e.dur_ns;
    f.device = e.device;
    f.api = api;
    f.library = reader::library_name(v.api->library);
    f.ret = e.ret;
    f.stack = e.stack;
    f.injected = e.injected();
    sink_.failure(f);
  }

  void on_alloc(const reader::Event& e, const ApiView& v, const std::string* api) {
    AllocationItem a;
    a.tid = e.tid;
    a.ts_ns = e.ts_ns;
    a.dur_ns = e.dur_ns;
    a.device = e.device;
    a.api = api;
    a.address = field(e, v.ptr);
    a.size = field(e, v.size);
    a.ret = e.ret;
    a.ok = e.ret == 0;
    a.stack = e.stack;
    a.owner = names_.get(analysis::owner_of(trace_, *v.api, field(e, v.caller), e.stack));
    if (const std::string* p = searches_.selecting(e.tid)) a.search_problem = names_.get(*p);
    sink_.allocation(a);
    if (!a.ok) {
      failure(e, v, api);
      return;
    }
    // The replay analyze uses too (memory_replay.h): a live address allocated again lost its free.
    if (auto old = replay_.alloc(v.physical, a.address, a.size, e.device, Live{e.ts_ns, a.owner})) {
      change(old->device, old->block.owner, -int64_t(old->size), e.ts_ns);
    }
    change(e.device, a.owner, int64_t(a.size), e.ts_ns);
  }

  void on_free(const reader::Event& e, const ApiView& v, const std::string* api) {
    uint64_t address = field(e, v.ptr);
    auto gone = replay_.free(v.physical, address);
    if (!gone) return;  // allocated before the recording began, or not device memory
    AllocationItem a;
    a.tid = e.tid;
    a.ts_ns = e.ts_ns;
    a.dur_ns = e.dur_ns;
    a.device = gone->device;
    a.api = api;
    a.address = address;
    a.size = gone->size;
    a.freed = true;
    a.alloc_ts_ns = gone->block.ts_ns;
    a.owner = gone->block.owner;
    a.stack = e.stack;
    sink_.allocation(a);
    change(gone->device, gone->block.owner, -int64_t(gone->size), e.ts_ns);
  }

  void change(int device, const std::string* owner, int64_t delta, uint64_t ts) {
    auto& d = bytes_[device];
    uint64_t& mine = d.by_owner[owner];
    mine = uint64_t(int64_t(mine) + delta);
    d.total = uint64_t(int64_t(d.total) + delta);
    MemorySample s{ts, device, owner, mine, d.total};
    sink_.memory(s);
  }

  void on_run(const reader::Event& e, const ApiView& v) {
    ExecutionItem x;
    x.tid = e.tid;
    x.ts_ns = e.ts_ns;
    x.dur_ns = e.dur_ns;
    x.device = e.device;
    x.ret = e.ret;
    x.backend = v.engine_and_knobs();
    x.engine = v.engine_and_knobs() ? int64_t(field(e, v.engine)) : int64_t(field(e, v.algo));
    static const std::string kNone;
    x.knobs = v.engine_and_knobs() ? &trace_.knobs_text(reader::KnobsId(field(e, v.knobs))) : &kNone;
    x.workspace = field(e, workspace_field(e.api, *v.api));
    x.problem = &analysis::problem_text_of(trace_, e, v);
    x.problem_hash = analysis::problem_hash_of(trace_, e, v);
    x.candidate = searches_.in_episode(e.tid, x.problem_hash);
    sink_.execution(x);
  }

  int workspace_field(uint16_t api, const reader::Api& a) {
    auto [it, fresh] = workspace_fields_.try_emplace(api, -1);
    if (fresh) it->second = a.field_index("workspace");
    return it->second;
  }

  struct DeviceBytes {
    uint64_t total = 0;
    std::unordered_map<const std::string*, uint64_t> by_owner;
  };

  const reader::Trace& trace_;
  TimelineSink& sink_;
  const WalkOptions& options_;
  analysis::ApiViews views_;
  reader::SearchTracker searches_;
  uint64_t done_before_ = 0, total_ = 0;
  uint64_t since_report_ = 0;
  ProcessInfo info_;
  Names names_;
  std::unordered_set<uint32_t> seen_tids_;
  analysis::MemoryReplay<Live> replay_;
  std::map<int, DeviceBytes> bytes_;
  std::unordered_map<uint16_t, int> workspace_fields_;
  std::vector<const std::string*> api_names_;  // by API id
};

}  // namespace

void walk_trace(const reader::Trace& trace, TimelineSink& sink, const WalkOptions& options, uint64_t done_before,
                uint64_t total) {
  Walker(trace, sink, options, done_before, total ? total : done_before + trace.call_records()).run();
  trace.release_events();
}

const analysis::ProcessTimes* times_of(const ExportJob& job, const ProcessInfo& p) {
  for (const auto& t : job.report.processes) {
    if (t.pid == p.pid && t.host == p.host) return &t;
  }
  return nullptr;
}

Result<bool> walk_job(const std::vector<std::string>& paths, TimelineSink& sink, const WalkOptions& options) {
  // Opened up front (metadata only; calls are mapped in by each walk and given back after it),
  // so that progress knows the job's size.
  auto opened = reader::open_all(paths, options.warnings);
  if (!opened) return opened.error();
  std::vector<std::unique_ptr<reader::Trace>> traces = std::move(*opened);
  if (traces.empty()) return Error{"no trace could be read"};
  uint64_t total = 0;
  for (const auto& t : traces) total += t->call_records();
  uint64_t done = 0;
  std::set<std::string> facts_files;
  for (const auto& t : traces) {
    if (t->facts() != nullptr && facts_files.insert(t->path()).second && options.warnings) {
      options.warnings->push_back(
          fmt::format("{}: a facts file: its processes, findings and summaries are here, not "
                      "their calls (a timeline needs the traces themselves)",
                      t->path()));
    }
    walk_trace(*t, sink, options, done, total);
    done += t->call_records();
    if (options.warnings) {
      for (const auto& d : t->diagnostics()) options.warnings->push_back(fmt::format("{}: {}", t->path(), d));
    }
  }
  return true;
}

}  // namespace cuprobe::exporter
