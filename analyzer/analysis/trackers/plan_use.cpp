// Plan use; see plan_use.h.
#include "analysis/trackers/plan_use.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/problem_access.h"

namespace cuprobe::analysis {

PlanUseTracker::PlanUseTracker(const reader::Trace& trace, SearchesTracker& searches)
    : trace_(trace), searches_(searches) {
  searches.on_search([this](const reader::SearchRecord& r) {
    if (!r.benchmark() && r.backend() && r.winner >= 0) {
      const auto& w = r.candidates[size_t(r.winner)];
      use(r.problem_hash, r.problem, w.engine, w.knobs, true, r.end_ns, w.last_exec_ns, uint64_t(w.executions), r.tid);
    }
  });
}

std::pair<ProblemUse*, size_t> PlanUseTracker::use(uint64_t hash, const std::string& problem, int64_t engine,
                                                   const std::string& knobs, bool backend, uint64_t first_ns,
                                                   uint64_t last_ns, uint64_t executions, uint32_t tid) {
  ProblemUse& p = problems_[hash];
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
  note_thread(*it, tid);
  return {&p, size_t(it - p.plans.begin())};
}

void PlanUseTracker::on_run(const reader::Event& e, const ApiView& v) {
  uint64_t hash = problem_hash_of(trace_, e, v);
  if (v.backend_execute && searches_.in_episode(e.tid, hash)) return;  // a candidate
  int64_t engine = v.engine_and_knobs() ? int64_t(field(e, v.engine)) : int64_t(field(e, v.algo));
  if (v.blas_matmul && engine < 0) return;  // cuBLASLt chose itself: no algorithm known, none to compare
  uint32_t knobs = v.engine_and_knobs() ? uint32_t(field(e, v.knobs)) : 0;
  PlanKey key{hash, engine, knobs};
  auto known = plan_index_.find(key);
  if (known != plan_index_.end()) {
    PlanUse& u = known->second.first->plans[known->second.second];
    u.first_ns = std::min(u.first_ns, e.ts_ns);
    u.last_ns = std::max(u.last_ns, e.ts_ns);
    ++u.executions;
    note_thread(u, e.tid);
    return;
  }
  static const std::string kNone;
  plan_index_.emplace(key, use(hash, problem_text_of(trace_, e, v), engine,
                               v.engine_and_knobs() ? trace_.knobs_text(reader::KnobsId(knobs)) : kNone,
                               v.engine_and_knobs(), e.ts_ns, e.ts_ns, 1, e.tid));
}

void PlanUseTracker::finish(ProcessFacts& f) { f.problems = std::move(problems_); }

}  // namespace cuprobe::analysis
