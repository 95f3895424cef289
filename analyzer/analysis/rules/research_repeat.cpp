// research-repeat: the same problem signature searched more than once in one process. The
// search result should have been cached: a repeat means the cache lost it (eviction, a limit
// too small), another thread has its own cache (PyTorch's v8 cache is per thread), or the
// cache key differs in something the signature leaves out (pointer alignment).
#include <map>
#include <set>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void research_repeat(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_repeats = spec.param("min_repeated_searches");
  for (const ProcessFacts& p : all.processes) {
    std::map<uint64_t, std::vector<const reader::SearchRecord*>> by_problem;
    for (const auto& s : p.searches) {
      if (s.mode == "benchmark") by_problem[s.problem_hash].push_back(&s);
    }
    int repeated_signatures = 0, repeats = 0, same_thread = 0, other_thread = 0, alignment_differs = 0;
    uint64_t repeat_ns = 0;
    std::vector<std::pair<uint64_t, std::string>> worst;
    for (const auto& [hash, list] : by_problem) {
      if (list.size() < 2) continue;
      ++repeated_signatures;
      std::set<uint32_t> tids, aligns;
      uint64_t ns = 0;
      for (size_t k = 0; k < list.size(); ++k) {
        if (k > 0) {
          ++repeats;
          ns += list[k]->end_ns - list[k]->start_ns;
          (tids.count(list[k]->tid) ? same_thread : other_thread)++;
        }
        tids.insert(list[k]->tid);
        if (list[k]->align) aligns.insert(list[k]->align);
      }
      if (aligns.size() > 1) ++alignment_differs;
      repeat_ns += ns;
      worst.emplace_back(ns, fmt::format("{}x {}", list.size(), list[0]->problem));
    }
    if (repeats < min_repeats) continue;
    std::sort(worst.rbegin(), worst.rend());
    // PyTorch's plan cache key includes the data pointers' alignment, which the signature
    // leaves out: the same shape at another alignment is another search.
    std::string cause = alignment_differs > 0
                            ? fmt::format("the same shape with data at different pointer alignments ({} of the "
                                          "signatures): each alignment is its own cache entry",
                                          alignment_differs)
                        : same_thread >= other_thread
                            ? "searched again on the same thread: the plan cache lost the entry (eviction, a "
                              "cache limit too small)"
                            : "searched again on other threads: each thread keeps its own plan cache";
    nlohmann::json ev = {{"process", process_label(p)},
                         {"repeated_signatures", repeated_signatures},
                         {"repeated_searches", repeats},
                         {"same_thread", same_thread},
                         {"other_threads", other_thread},
                         {"repeat_time_s", seconds(repeat_ns)},
                         {"alignment_differs", alignment_differs},
                         {"cause", cause}};
    Finding f = make_finding(spec, ev, seconds(repeat_ns));
    f.pids.push_back(p.pid);
    for (size_t k = 0; k < worst.size() && k < 5; ++k) f.problems.push_back(worst[k].second);
    emit(std::move(f));
  }
}

const RegisterRule kRegister("research-repeat", research_repeat);

}  // namespace
}  // namespace cuprobe::analysis
