// research-repeat: the same problem signature searched more than once in one process. The
// search result should have been cached: a repeat means the cache lost it (eviction, a limit
// too small), another thread has its own cache (PyTorch's v8 cache is per thread), or the
// cache key differs in something the signature leaves out (pointer alignment).
#include <algorithm>
#include <map>
#include <set>

#include "analysis/common.h"
#include "analysis/pinning.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void research_repeat(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_repeats = spec.param("min_repeated_searches");
  double routine_threads = spec.param("routine_threads");
  for (const ProcessFacts& p : all.processes) {
    std::map<uint64_t, std::vector<const reader::SearchRecord*>> by_problem;
    for (const auto& s : p.searches) {
      if (s.benchmark() && !s.was_steered()) by_problem[s.problem_hash].push_back(&s);
    }
    // Each repeat is one of: the first search of the problem on another thread (PyTorch's plan
    // cache is per thread: forward on the main thread, backward on autograd's — a one-off per
    // thread), the same thread at another pointer alignment (another cache key), or the same
    // thread and alignment again (the cache lost the entry).
    int repeated_signatures = 0, repeats = 0, same_thread = 0, other_thread = 0, alignment_differs = 0;
    int evicted = 0, per_alignment = 0;
    size_t max_threads = 0;
    uint64_t repeat_ns = 0, costly_ns = 0;
    std::vector<std::pair<uint64_t, std::string>> worst;
    for (const auto& [hash, list] : by_problem) {
      if (list.size() < 2) continue;
      ++repeated_signatures;
      std::set<uint32_t> tids, aligns;
      std::set<std::pair<uint32_t, uint32_t>> keys;  // (thread, alignment)
      uint64_t ns = 0;
      for (size_t k = 0; k < list.size(); ++k) {
        const auto* s = list[k];
        uint64_t wall = s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
        if (k > 0) {
          ++repeats;
          ns += wall;
          (tids.count(s->tid) ? same_thread : other_thread)++;
          if (keys.count({s->tid, s->align})) {
            ++evicted;
            costly_ns += wall;
          } else if (tids.count(s->tid)) {
            ++per_alignment;
            costly_ns += wall;
          }
        }
        tids.insert(s->tid);
        keys.insert({s->tid, s->align});
        if (s->align) aligns.insert(s->align);
      }
      max_threads = std::max(max_threads, tids.size());
      if (aligns.size() > 1) ++alignment_differs;
      repeat_ns += ns;
      worst.emplace_back(ns, fmt::format("{}x {}", list.size(), list[0]->problem));
    }
    if (repeats < min_repeats) continue;
    std::sort(worst.rbegin(), worst.rend());
    // A problem searched once on each of a few threads is PyTorch's per-thread cache doing its
    // job: a one-off cost, reported as information. Searches on many threads (a new thread per
    // step), at changing alignments or after an eviction keep costing.
    bool thread_churn = double(max_threads) > routine_threads;
    bool costly = evicted + per_alignment >= min_repeats || thread_churn;
    std::vector<std::string> causes;
    if (per_alignment > 0) {
      causes.push_back(fmt::format("the same shape with data at different pointer alignments ({} of the signatures, {} "
                                   "searches): each alignment is its own cache entry",
                                   alignment_differs, per_alignment));
    }
    if (evicted > 0) {
      causes.push_back(fmt::format("searched again on the same thread at the same alignment ({}x): the plan cache lost "
                                   "the entry (eviction, a cache limit too small)",
                                   evicted));
    }
    if (thread_churn) {
      causes.push_back(fmt::format("searched on {} different threads: each thread keeps its own plan cache, and new "
                                   "threads keep arriving",
                                   max_threads));
    }
    if (causes.empty()) {
      causes.push_back("searched once more on another thread (PyTorch's plan cache is per thread: forward on the main "
                       "thread, backward on autograd's); a one-off cost per thread");
    }
    std::string cause;
    for (const auto& c : causes) cause += (cause.empty() ? "" : "; and ") + c;
    nlohmann::json ev = {{"process", process_label(p)},
                         {"repeated_signatures", repeated_signatures},
                         {"repeated_searches", repeats},
                         {"same_thread", same_thread},
                         {"other_threads", other_thread},
                         {"evicted", evicted},
                         {"other_alignment", per_alignment},
                         {"max_threads_per_problem", max_threads},
                         {"repeat_time_s", seconds(repeat_ns)},
                         {"alignment_differs", alignment_differs},
                         {"per_thread_only", !costly},
                         {"cause", cause}};
    Finding f = make_finding(spec, ev, seconds(costly ? repeat_ns : costly_ns));
    if (!costly) {
      f.severity = Severity::kInfo;
      f.fix = spec.fix_for("per-thread cache");
    }
    f.pids.push_back(p.pid);
    for (size_t k = 0; k < worst.size() && k < 5; ++k) f.problems.push_back(worst[k].second);
    emit(std::move(f));
  }
}

const RegisterRule kRegister("research-repeat", research_repeat);

}  // namespace
}  // namespace cuprobe::analysis
