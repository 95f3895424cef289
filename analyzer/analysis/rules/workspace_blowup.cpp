// workspace-blowup: cuDNN workspaces that are large relative to the device's memory or to what
// an almost-as-fast candidate needed, search workspace spikes, and a workspace followed by an
// out-of-memory failure.
#include <algorithm>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void workspace_blowup(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double device_fraction = spec.param("device_fraction");
  double search_fraction = spec.param("search_fraction");
  double ratio = spec.param("alternative_ratio");
  double tolerance = spec.param("time_tolerance");
  double min_bytes = spec.param("min_bytes");
  for (const ProcessFacts& p : all.processes) {
    uint64_t total_mem = 0;
    auto mem = p.memory.find(p.device);
    if (mem != p.memory.end()) total_mem = mem->second.total_mem;
    nlohmann::json items = nlohmann::json::array();
    std::vector<std::string> problems;
    uint64_t worst_ws = 0, worst_alt = 0, worst_search = 0;
    std::string worst_alt_plan;
    for (const auto& s : p.searches) {
      std::vector<std::string> why;
      uint64_t chosen_ws = 0;
      if (s.winner >= 0) {
        const auto& w = s.candidates[size_t(s.winner)];
        chosen_ws = w.workspace;
        if (total_mem && double(chosen_ws) >= device_fraction * double(total_mem) && double(chosen_ws) >= min_bytes) {
          why.push_back(fmt::format("the chosen plan needs {} ({:.0f}% of the device)", human_bytes(chosen_ws),
                                    100.0 * double(chosen_ws) / double(total_mem)));
        }
        // A candidate within `tolerance` of the winner's time that needs far less.
        const reader::SearchCandidate* alt = nullptr;
        for (const auto& c : s.candidates) {
          if (c.time_ms < 0 || w.time_ms <= 0 || c.build_status != 0 || &c == &w) continue;
          if (c.time_ms <= w.time_ms * (1 + tolerance) && (alt == nullptr || c.workspace < alt->workspace)) alt = &c;
        }
        if (alt && double(chosen_ws) >= ratio * double(std::max<uint64_t>(alt->workspace, 1 << 20)) &&
            double(chosen_ws) >= min_bytes) {
          why.push_back(fmt::format("engine {} [{}] needs {} and is within {:.1f}% of its time", alt->engine, alt->knobs,
                                    human_bytes(alt->workspace), 100.0 * (alt->time_ms / w.time_ms - 1)));
          if (chosen_ws > worst_alt) {
            worst_alt = chosen_ws;
            worst_alt_plan = fmt::format("engine {} ({}) instead of engine {} ({})", alt->engine,
                                         human_bytes(alt->workspace), w.engine, human_bytes(chosen_ws));
          }
        }
      }
      if (total_mem && double(s.search_workspace) >= search_fraction * double(total_mem) &&
          double(s.search_workspace) >= min_bytes) {
        why.push_back(fmt::format("the search itself allocated {} ({:.0f}% of the device)", human_bytes(s.search_workspace),
                                  100.0 * double(s.search_workspace) / double(total_mem)));
        worst_search = std::max(worst_search, s.search_workspace);
      }
      if (why.empty()) continue;
      worst_ws = std::max(worst_ws, chosen_ws);
      std::string reason;
      for (const auto& r : why) reason += (reason.empty() ? "" : "; ") + r;
      items.push_back({{"problem", s.problem}, {"workspace", chosen_ws}, {"search_workspace", s.search_workspace},
                       {"reason", reason}});
      if (problems.size() < 5) problems.push_back(s.problem + ": " + reason);
    }
    int ooms_after = 0;
    // Failures a fault rule made are not the workspace's doing; the memory cap's are (a smaller device).
    for (const auto& o : p.ooms) ooms_after += o.search_problem.empty() || (!o.injected_by.empty() && o.injected_by != "mem-cap") ? 0 : 1;
    if (items.empty() && ooms_after == 0) continue;
    nlohmann::json ev = {{"process", process_label(p)},
                         {"problems", items.size()},
                         {"largest_workspace", worst_ws},
                         {"largest_search_workspace", worst_search},
                         {"device_memory", total_mem},
                         {"alternative", worst_alt_plan.empty() ? "none close in time" : worst_alt_plan},
                         {"ooms_during_plan_selection", ooms_after},
                         {"items", items}};
    Finding f = make_finding(spec, ev, 0);
    if (ooms_after > 0) f.severity = Severity::kError;
    f.pids.push_back(p.pid);
    f.problems = problems;
    std::vector<uint32_t> stacks;
    for (const auto& it : items) {
      for (const auto& s : p.searches) {
        if (s.problem == it["problem"] && s.stack) {
          stacks.push_back(s.stack);
          break;
        }
      }
    }
    for (const auto& o : p.ooms) {
      if (!o.search_problem.empty() && o.stack) stacks.push_back(o.stack);
    }
    f.call_sites = top_sites(all, p, stacks, "plan selections or failed requests from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("workspace-blowup", workspace_blowup);

}  // namespace
}  // namespace cuprobe::analysis
