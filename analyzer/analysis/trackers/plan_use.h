// Which plan (backend engine and knobs) or algorithm (legacy) each problem ran with, over time.
// A plan is a "use" once its selection is over: executions during a search are candidates. A
// heuristic selection's winner keeps running while its episode is open (until the thread turns
// to another problem), so its runs are counted when the search closes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

class PlanUseTracker {
 public:
  // `searches`: executions inside a thread's open selection are not uses; heuristic winners are
  // told as their search closes.
  PlanUseTracker(const reader::Trace& trace, SearchesTracker& searches);
  PlanUseTracker(const PlanUseTracker&) = delete;  // `searches` calls back into this one
  PlanUseTracker& operator=(const PlanUseTracker&) = delete;
  void on_event(const reader::Event& e, const ApiView& v) {
    if (v.runs_chosen() && e.ret == 0) on_run(e, v);
  }
  // problems.
  void finish(ProcessFacts& f);

 private:
  // Plans seen executing, by (problem hash, engine or algorithm, knob string id): executions are
  // looked up here without touching strings.
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

  void on_run(const reader::Event& e, const ApiView& v);
  std::pair<ProblemUse*, size_t> use(uint64_t hash, const std::string& problem, int64_t engine, const std::string& knobs,
                                     bool backend, uint64_t first_ns, uint64_t last_ns, uint64_t executions,
                                     uint32_t tid);
  static void note_thread(PlanUse& u, uint32_t tid) {
    if (u.tid == 0) u.tid = tid;
    else if (u.tid != tid) u.several_threads = true;
  }

  const reader::Trace& trace_;
  const SearchesTracker& searches_;
  std::map<uint64_t, ProblemUse> problems_;  // by problem hash; nodes never move
  std::unordered_map<PlanKey, std::pair<ProblemUse*, size_t>, PlanKeyHash> plan_index_;
};

}  // namespace cuprobe::analysis
