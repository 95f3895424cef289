// Search and heuristic-selection recognition; see searches.h.
#include "trace/searches.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace cuprobe::reader {

namespace {

enum Role : uint8_t {
  kOther,
  kFinalize,
  kExecute,
  kElapsed,
  kEventRecord,
  kAlloc,
  kFree,
  kLegacyFind,
  kLegacyGet,
  kLegacyConvExec,
  kSync,
  kAttributeQuery,
  kBlasHeuristic,
  kBlasMatmul,
};

constexpr int kGraphKind = 15;  // CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
constexpr int kPlanKind = 5;    // CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
constexpr int kHeurKind = 4;    // CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR

double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

}  // namespace

std::vector<SearchCandidate> legacy_candidates(const std::vector<trace::AlgoResult>* results, const Trace* trace) {
  std::vector<SearchCandidate> out;
  if (results == nullptr) return out;
  for (const trace::AlgoResult& r : *results) {
    SearchCandidate c;
    c.engine = r.algo;
    c.build_status = r.status;
    c.time_ms = r.status == 0 ? double(r.time_ms) : -1;
    c.workspace = r.memory;
    c.math = r.math_type;
    c.deterministic = r.determinism != 0;
    if (trace != nullptr && r.knobs != 0) {
      c.knobs = trace->knobs_text(KnobsId(r.knobs));
    } else if (trace == nullptr || r.math_type >= 0) {
      c.knobs = "math=" + std::to_string(r.math_type) + (c.deterministic ? "" : ",nondeterministic");
    }
    out.push_back(c);
  }
  return out;
}

SearchTracker::SearchTracker(const Trace& trace, Sink sink) : trace_(trace), sink_(std::move(sink)) {
  const auto& apis = trace.apis();
  fields_.resize(apis.size());
  role_.assign(apis.size(), kOther);
  for (size_t id = 0; id < apis.size(); ++id) {
    const Api& a = apis[id];
    Fields& f = fields_[id];
    f = Fields{a.field_index("desc"),  a.field_index("kind"),  a.field_index("problem"),  a.field_index("engine"),
               a.field_index("knobs"), a.field_index("workspace"), a.field_index("notes"), a.field_index("plan"),
               a.field_index("ms"),    a.field_index("size"),  a.field_index("results"),  a.field_index("algo"),
               a.field_index("math"),  a.field_index("returned"), a.field_index("ws_ptr"), a.field_index("align"),
               a.field_index("event"), a.field_index("start"), a.field_index("end"),   a.field_index("ptr")};
    if (a.flags & trace::kApiPlanFinalize) role_[id] = kFinalize;
    else if (a.flags & trace::kApiPlanExecute) role_[id] = kExecute;
    else if (a.flags & trace::kApiEventTiming) role_[id] = kElapsed;
    else if (a.flags & trace::kApiEventRecord) role_[id] = kEventRecord;
    else if (a.flags & trace::kApiDeviceAlloc) role_[id] = kAlloc;
    else if (a.flags & trace::kApiDeviceFree) role_[id] = kFree;
    else if (a.flags & trace::kApiLegacyFind) role_[id] = kLegacyFind;
    else if (a.flags & trace::kApiLegacyGet) role_[id] = kLegacyGet;
    else if (a.flags & trace::kApiLegacyConvExec) role_[id] = kLegacyConvExec;
    else if (a.flags & trace::kApiBlasHeuristic) role_[id] = kBlasHeuristic;
    else if (a.flags & trace::kApiBlasMatmul) role_[id] = kBlasMatmul;
    else if (a.flags & trace::kApiSync)
      role_[id] = kSync;
    else if (a.name == "cudnnBackendGetAttribute")
      role_[id] = kAttributeQuery;
  }
  for (const PinEvent& p : trace.pins()) {
    if (p.outcome == trace::PinOutcome::kPinned || p.outcome == trace::PinOutcome::kBudgeted) {
      steered_[{p.tid, p.problem_hash}].push_back(&p);
    }
  }
}

// A selection was steered when the shim wrote its pin record while it ran (a legacy one: at its
// Find call, which is where the record begins).
void SearchTracker::emit(SearchRecord& r) {
  if (!steered_.empty()) {
    auto it = steered_.find({r.tid, r.problem_hash});
    if (it != steered_.end()) {
      uint64_t end = r.end_ns > r.start_ns ? r.end_ns : r.start_ns;
      for (const PinEvent* p : it->second) {
        if (p->ts_ns + 1000 >= r.start_ns && p->ts_ns <= end + 1000) r.steered = p->outcome;
      }
    }
  }
  sink_(r);
}

// A benchmark search is complete once its winner ran; a heuristic selection once a candidate
// executed successfully (the first one is the winner).
void SearchTracker::close(Episode& ep) {
  if (!ep.open) return;
  settle_pending(ep);
  SearchRecord& r = ep.rec;
  if (ep.timed) {
    r.mode = SearchMode::kBenchmark;
  } else if (r.winner < 0) {
    r.winner = ep.first_ok;
  }
  r.complete = r.winner >= 0;
  emit(r);
  ep = Episode{};
  --open_episodes_;
}

void SearchTracker::settle_pending(Episode& ep) {
  ep.rec.search_workspace = std::max(ep.rec.search_workspace, ep.pending_size);
  ep.pending_ptr = ep.pending_size = 0;
}

void SearchTracker::on_event(const Event& e) {
  if (e.api >= role_.size()) return;
  uint8_t role = role_[e.api];
  if (role == kOther) return;
  const Fields& f = fields_[e.api];
  ThreadState& ts = threads_[e.tid];
  if (role == kSync) {  // the thread waited for the device while choosing a plan
    if (ts.episode.open) ts.episode.rec.wait_ns += e.dur_ns;
    return;
  }
  if (role == kAttributeQuery) {  // cuDNN's heuristics answered (the shim records those queries)
    if (ts.episode.open && i(e, f.kind) == kHeurKind) ts.episode.rec.heur_ns += e.dur_ns;
    return;
  }
  // An allocation freed before the thread did any other work the tracker sees was a probe: an
  // allocator measuring the room it has (PyTorch's cudaMallocAsync backend does so before each
  // search: CudaMallocAsyncAllocator::cacheInfo), which no plan ran in. Anything else: in use.
  if (role != kFree && ts.episode.pending_size) settle_pending(ts.episode);
  switch (role) {
    case kFinalize: return on_finalize(e, f, ts.episode);
    case kExecute: return on_execute(e, f, ts);
    case kEventRecord: return on_event_record(e, f, ts);
    case kElapsed: return on_elapsed(e, f, ts);
    case kAlloc: {
      Episode& ep = ts.episode;
      if (ep.open && e.ret == 0) {
        ep.pending_ptr = u(e, f.ptr);
        ep.pending_size = u(e, f.size);
      }
      return;
    }
    case kFree: {
      Episode& ep = ts.episode;
      if (ep.open && ep.pending_size && ep.pending_ptr != 0 && u(e, f.ptr) == ep.pending_ptr) {
        ep.rec.probe_bytes = std::max(ep.rec.probe_bytes, ep.pending_size);
        ep.rec.probes++;
        ep.pending_ptr = ep.pending_size = 0;
      }
      return;
    }
    case kLegacyFind:
    case kLegacyGet: return on_legacy_query(e, f, SearchApi::kLegacy, role == kLegacyFind, ts);
    case kBlasHeuristic: return on_legacy_query(e, f, SearchApi::kCublasLt, false, ts);
    case kLegacyConvExec:
    case kBlasMatmul: return on_legacy_execute(e, f, ts);
    default: return;
  }
}

// An operation graph or a plan finalized: opens an episode for its problem (closing one for
// another problem), and a plan becomes one of its candidates.
void SearchTracker::on_finalize(const Event& e, const Fields& f, Episode& ep) {
  int64_t kind = i(e, f.kind);
  if (kind != kGraphKind && kind != kPlanKind) return;
  const Problem* problem = trace_.problem(ProblemId(u(e, f.problem)));
  uint64_t hash = problem ? problem->hash : 0;
  if (kind == kGraphKind && e.ret != 0) return;
  // Another problem, or the same one selected again after its plan was chosen (PyTorch
  // re-selects when a cached plan's workspace cannot be had): a new episode.
  bool chosen = ep.timed ? ep.rec.winner >= 0 : ep.first_ok >= 0;
  if (ep.open && hash != 0 && (ep.rec.problem_hash != hash || (kind == kGraphKind && chosen))) close(ep);
  if (!ep.open) {
    ep.open = true;
    ++open_episodes_;
    ep.rec = SearchRecord{};
    ep.rec.pid = e.pid;
    ep.rec.tid = e.tid;
    ep.rec.device = e.device;
    ep.rec.api = SearchApi::kBackend;
    ep.rec.function = name_of(SearchApi::kBackend);
    ep.rec.mode = SearchMode::kHeuristic;
    ep.rec.problem = problem ? problem->text : std::string();
    ep.rec.problem_info = problem;
    ep.rec.problem_hash = hash;
    ep.rec.start_ns = e.ts_ns;
    ep.rec.align = uint32_t(u(e, f.align));
  }
  if (ep.rec.stack == 0) ep.rec.stack = e.stack;
  ep.rec.end_ns = e.ts_ns + e.dur_ns;
  if (kind != kPlanKind) return;
  ep.rec.build_ns += e.dur_ns;
  SearchCandidate c;
  c.plan = u(e, f.desc);
  c.engine = i(e, f.engine);
  c.knobs = trace_.knobs_text(KnobsId(u(e, f.knobs)));
  c.workspace = u(e, f.workspace);
  c.notes = uint32_t(u(e, f.notes));
  c.build_status = e.ret;
  if (e.injected()) c.injected = true;
  if (e.ret != 0) ep.rec.plans_rejected++;
  ep.by_plan[c.plan] = ep.rec.candidates.size();
  ep.rec.candidates.push_back(c);
  if (ep.rec.device < 0) ep.rec.device = e.device;
}

// A plan executed: a candidate ran; one run again after it was timed is a search's winner.
void SearchTracker::on_execute(const Event& e, const Fields& f, ThreadState& ts) {
  ++ts.executions;
  if (uint64_t plan = u(e, f.plan); plan != ts.last_plan || ts.same_plan_since == 0) {
    ts.last_plan = plan;
    ts.same_plan_since = ts.executions;
  }
  Episode& ep = ts.episode;
  if (!ep.open) return;
  auto it = ep.by_plan.find(u(e, f.plan));
  if (it == ep.by_plan.end()) {
    // A plan from outside the episode runs: the episode is over.
    close(ep);
    return;
  }
  SearchCandidate& c = ep.rec.candidates[it->second];
  bool rerun_after_timing = ep.timed && c.time_ms >= 0;
  if (!rerun_after_timing) ep.rec.launch_ns += e.dur_ns;
  c.executions++;
  c.exec_status = e.ret;
  if (e.injected()) c.injected = true;
  c.last_exec_ns = e.ts_ns;
  ep.last_executed = int(it->second);
  if (ep.first_ok < 0) ep.rec.end_ns = e.ts_ns;
  if (e.ret == 0 && ep.first_ok < 0) ep.first_ok = int(it->second);
  if (rerun_after_timing) {
    ep.rec.end_ns = e.ts_ns;
    ep.rec.winner = int(it->second);
    close(ep);
  }
}

void SearchTracker::on_event_record(const Event& e, const Fields& f, ThreadState& ts) {
  ts.records_seen = true;
  if (e.ret != 0) return;
  if (ts.recorded_at.size() >= 4096) ts.recorded_at.clear();  // only the latest records matter
  ts.recorded_at[u(e, f.event)] = ts.executions;
}

// A time measured between two events: the latest executed candidate's, per run, when the plan
// executions between the two records are one or more runs of that plan and none came after.
void SearchTracker::on_elapsed(const Event& e, const Fields& f, ThreadState& ts) {
  Episode& ep = ts.episode;
  if (!ep.open || ep.last_executed < 0 || e.ret != 0) return;
  uint64_t runs = 1;
  if (ts.records_seen) {
    // Traces whose event records carry no role (older files read without the table) keep
    // the earlier reading: any time measured while a selection is open.
    auto start = ts.recorded_at.find(u(e, f.start));
    auto end = ts.recorded_at.find(u(e, f.end));
    if (start == ts.recorded_at.end() || end == ts.recorded_at.end() || end->second <= start->second ||
        end->second != ts.executions || ts.same_plan_since > start->second + 1) {
      return;
    }
    runs = end->second - start->second;
  }
  double ms = as_double(u(e, f.ms)) / double(runs);
  if (runs > 1 && !ep.timed) {
    // Several runs of one candidate: a search once two candidates were timed so.
    bool other = false;
    for (const auto& [index, t] : ep.multi_run_times) other = other || index != size_t(ep.last_executed);
    ep.multi_run_times.emplace_back(size_t(ep.last_executed), ms);
    if (!other) return;
    ep.rec.end_ns = e.ts_ns + e.dur_ns;
    for (const auto& [index, t] : ep.multi_run_times) {
      SearchCandidate& c = ep.rec.candidates[index];
      if (c.time_ms < 0 || t < c.time_ms) c.time_ms = t;
    }
    ep.multi_run_times.clear();
    ep.timed = true;
    return;
  }
  SearchCandidate& c = ep.rec.candidates[size_t(ep.last_executed)];
  if (c.time_ms < 0 || ms < c.time_ms) c.time_ms = ms;
  ep.timed = true;
  ep.rec.end_ns = e.ts_ns + e.dur_ns;
}

// A legacy cudnnFind* (benchmark) or cudnnGet*_v7 (heuristic) call: a search awaiting the
// problem's next execution on this thread, which names the winner.
void SearchTracker::on_legacy_query(const Event& e, const Fields& f, SearchApi api, bool find, ThreadState& ts) {
  const Problem* problem = trace_.problem(ProblemId(u(e, f.problem)));
  uint64_t hash = problem ? problem->hash : 0;
  auto old = ts.legacy.find(hash);
  if (old != ts.legacy.end()) {
    // Asked again before running it: still incomplete (cuBLASLt's heuristics asked again, as an
    // application that only queries does: nothing new when it is the same question).
    if (old->second.rec.api != SearchApi::kCublasLt) emit(old->second.rec);
    ts.legacy.erase(old);
  }
  SearchRecord r;
  r.pid = e.pid;
  r.tid = e.tid;
  r.device = e.device;
  r.api = api;
  r.function = trace_.api_name(e.api);
  r.mode = find ? SearchMode::kBenchmark : SearchMode::kHeuristic;
  r.problem = problem ? problem->text : std::string();
  r.problem_info = problem;
  r.problem_hash = hash;
  r.start_ns = e.ts_ns;
  r.align = uint32_t(u(e, f.align));
  r.stack = e.stack;
  r.end_ns = e.ts_ns + e.dur_ns;
  r.candidates = legacy_candidates(trace_.algo_results(AlgoResultsId(u(e, f.results))), &trace_);
  for (const auto& c : r.candidates) r.plans_rejected += c.build_status != 0 ? 1 : 0;
  r.search_workspace = f.workspace >= 0 ? u(e, f.workspace) : 0;
  ts.legacy[hash] = LegacyPending{r};
}

void SearchTracker::on_legacy_execute(const Event& e, const Fields& f, ThreadState& ts) {
  const Problem* problem = trace_.problem(ProblemId(u(e, f.problem)));
  auto it = ts.legacy.find(problem ? problem->hash : 0);
  if (it == ts.legacy.end()) return;
  SearchRecord& r = it->second.rec;
  bool blas = r.api == SearchApi::kCublasLt;
  // A cuBLASLt algorithm is its id and configuration (several configurations of one id are offered).
  int64_t algo = blas ? i(e, f.engine) : i(e, f.algo);
  std::string knobs = blas ? trace_.knobs_text(KnobsId(u(e, f.knobs))) : std::string();
  r.winner = -1;
  for (size_t k = 0; k < r.candidates.size(); ++k) {
    if (r.candidates[k].engine == algo && (!blas || r.candidates[k].knobs == knobs)) {
      r.winner = int(k);
      if (blas) break;  // the first offer of that configuration
    }
  }
  if (r.winner < 0) {
    SearchCandidate c;
    c.engine = algo;
    c.knobs = knobs;
    if (blas) c.workspace = u(e, f.workspace);
    r.candidates.push_back(c);
    r.winner = int(r.candidates.size()) - 1;
  }
  r.candidates[size_t(r.winner)].executions++;
  r.candidates[size_t(r.winner)].exec_status = e.ret;
  r.end_ns = e.ts_ns;
  r.complete = true;
  if (blas) {
    // Emitted the first time this thread runs the problem, and whenever it runs another algorithm.
    auto [seen, fresh] = ts.blas_chosen.try_emplace(r.problem_hash, algo, knobs);
    if (fresh || seen->second != std::make_pair(algo, knobs)) {
      seen->second = {algo, knobs};
      emit(r);
    }
  } else {
    emit(r);
  }
  ts.legacy.erase(it);
}

const std::string* SearchTracker::selecting(uint32_t tid) const {
  if (open_episodes_ == 0) return nullptr;
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.episode.open) return nullptr;
  const Episode& ep = it->second.episode;
  bool done = ep.timed ? ep.rec.winner >= 0 : ep.first_ok >= 0;
  return done ? nullptr : &ep.rec.problem;
}

bool SearchTracker::in_episode(uint32_t tid, uint64_t problem_hash) const {
  if (open_episodes_ == 0) return false;
  auto it = threads_.find(tid);
  return it != threads_.end() && it->second.episode.open && it->second.episode.rec.problem_hash == problem_hash;
}

void SearchTracker::finish() {
  for (auto& [tid, ts] : threads_) {
    close(ts.episode);
    for (auto& [hash, pending] : ts.legacy) {
      // A cuBLASLt query never followed by its matmul: new only for a problem never run.
      if (pending.rec.api != SearchApi::kCublasLt || !ts.blas_chosen.count(hash)) emit(pending.rec);
    }
    ts.legacy.clear();
  }
}

}  // namespace cuprobe::reader
