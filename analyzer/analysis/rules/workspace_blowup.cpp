// workspace-blowup: cuDNN workspaces that are large relative to the memory the process had (the
// device, or the memory cap standing for a smaller one) and to the problem's own tensors, or to
// what an almost-as-fast candidate needed; search workspace spikes. Out-of-memory failures during
// plan selection make it an error when a workspace was outsized; alone they are PyTorch's normal
// search under memory pressure (it drops plans needing more than is free), and a workspace that is
// small next to the problem's own tensors is the batch's size, not the workspace's.
#include <algorithm>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

// Bytes of one element of a cudnnDataType_t; 4 for kinds this table does not name.
uint64_t element_bytes(int dtype) {
  switch (dtype) {
    case 1: case 10: return 8;                     // double, int64
    case 2: case 9: return 2;                      // half, bfloat16
    case 3: case 6: case 11: case 12: case 13: return 1;  // int8, uint8, bool, fp8
    default: return 4;
  }
}

// The bytes of a problem's own tensors (inputs and outputs), 0 when the problem is not typed.
uint64_t tensor_bytes(const reader::Problem* p) {
  if (p == nullptr || !p->typed) return 0;
  uint64_t total = 0;
  for (int i = 0; i < p->desc.n_tensors && i < trace::kProblemMaxTensors; ++i) {
    const trace::ProblemTensor& t = p->desc.tensors[i];
    uint64_t n = element_bytes(t.dtype);
    for (int d = 0; d < t.nbdims && d < trace::kProblemMaxDims; ++d) n *= uint64_t(std::max<int64_t>(t.dims[d], 1));
    total += n;
  }
  return total;
}

void workspace_blowup(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double device_fraction = spec.param("device_fraction");
  double search_fraction = spec.param("search_fraction");
  double ratio = spec.param("alternative_ratio");
  double tolerance = spec.param("time_tolerance");
  double min_bytes = spec.param("min_bytes");
  double tensor_ratio = spec.param("tensor_ratio");
  for (const ProcessFacts& p : all.processes) {
    uint64_t total_mem = 0;
    auto mem = p.memory.find(p.device);
    if (mem != p.memory.end()) total_mem = mem->second.total_mem;
    // A memory cap (fault mode) stands for a smaller device.
    auto cap = p.mem_cap.find(p.device);
    bool capped = cap != p.mem_cap.end() && cap->second > 0 && (total_mem == 0 || cap->second < total_mem);
    if (capped) total_mem = cap->second;
    nlohmann::json items = nlohmann::json::array();
    std::vector<std::string> problems;
    uint64_t worst_ws = 0, worst_alt = 0, worst_search = 0;
    std::string worst_alt_plan;
    for (const auto& s : p.searches) {
      std::vector<std::string> why;
      uint64_t chosen_ws = 0;
      // Large for the device, and large next to the problem's own tensors: a workspace smaller
      // than the activations it works on is the batch's size speaking (unknown tensors: counted).
      uint64_t own = tensor_bytes(s.problem_info);
      auto outsized = [&](uint64_t ws) { return own == 0 || double(ws) >= tensor_ratio * double(own); };
      if (s.winner >= 0) {
        const auto& w = s.candidates[size_t(s.winner)];
        chosen_ws = w.workspace;
        if (total_mem && double(chosen_ws) >= device_fraction * double(total_mem) && double(chosen_ws) >= min_bytes &&
            outsized(chosen_ws)) {
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
      const bool plan_outsized = !why.empty();
      if (total_mem && double(s.search_workspace) >= search_fraction * double(total_mem) &&
          double(s.search_workspace) >= min_bytes && outsized(s.search_workspace)) {
        why.push_back(fmt::format("the search itself allocated {} ({:.0f}% of the {}){}", human_bytes(s.search_workspace),
                                  100.0 * double(s.search_workspace) / double(total_mem),
                                  capped ? "memory cap" : "device",
                                  own ? fmt::format(", {:.0f}x the problem's own tensors ({})",
                                                    double(s.search_workspace) / double(own), human_bytes(own))
                                      : ""));
        worst_search = std::max(worst_search, s.search_workspace);
      }
      if (why.empty()) continue;
      if (plan_outsized) worst_ws = std::max(worst_ws, chosen_ws);
      std::string reason;
      for (const auto& r : why) reason += (reason.empty() ? "" : "; ") + r;
      items.push_back({{"problem", s.problem}, {"workspace", chosen_ws}, {"search_workspace", s.search_workspace},
                       {"tensor_bytes", own}, {"reason", reason}});
      if (problems.size() < 5) problems.push_back(s.problem + ": " + reason);
    }
    int ooms_after = 0;
    // Failures a fault rule made are not the workspace's doing; the memory cap's are (a smaller device).
    for (const auto& o : p.ooms)
      ooms_after += o.search_problem.empty() || (!o.injected_by.empty() && !o.mem_cap) ? 0 : 1;
    // Alone, failures during plan selection are PyTorch's search under memory pressure (it moves
    // on to plans needing less): the out-of-memory story (oom-postmortem), not a workspace's.
    if (items.empty()) continue;
    // What was outsized, in words: the chosen plans' workspaces, the searches' allocations, or both.
    std::string sizes;
    if (worst_ws) sizes = "largest plan workspace " + human_bytes(worst_ws);
    if (worst_search) sizes += (sizes.empty() ? "" : ", ") + ("largest search allocation " + human_bytes(worst_search));
    nlohmann::json ev = {{"process", process_label(p)},
                         {"problems", items.size()},
                         {"sizes", sizes},
                         {"largest_workspace", worst_ws},
                         {"largest_search_workspace", worst_search},
                         {"device_memory", total_mem},
                         {"memory_limit", capped ? "memory cap" : "device"},
                         {"alternative", worst_alt_plan.empty() ? "none close in time" : worst_alt_plan},
                         {"ooms_during_plan_selection", ooms_after},
                         {"items", items}};
    Finding f = make_finding(spec, ev, 0);
    if (ooms_after > 0) f.severity = Severity::kError;
    f.pids.push_back(p.pid);
    f.problems = problems;
    std::vector<reader::StackId> stacks;
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
