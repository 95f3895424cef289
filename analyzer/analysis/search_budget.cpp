// The search budget's account of a process: see search_budget.h.
#include "analysis/search_budget.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace cuprobe::analysis {

BudgetSummary budget_summary(const ProcessFacts& p) {
  BudgetSummary s;
  if (p.trace == nullptr) return s;
  const reader::Trace& t = *p.trace;
  if (auto it = t.properties().find(uint32_t(trace::Property::kSearchBudget)); it != t.properties().end()) {
    s.active = true;
    s.budget_pct = double(it->second) / 100.0;
  }
  std::set<uint64_t> problems;
  for (const auto& e : t.pins()) {
    if (e.outcome == trace::PinOutcome::kSearchedLater) {
      s.active = true;
      ++s.searched_later;
      s.searched_later_moved += e.moved;
      if (e.search_ms > 0) s.searched_later_ms += e.search_ms;
      if (e.replaced_ms >= 0 && e.pinned_ms >= 0) {
        s.heuristic_run_ms += e.replaced_ms;
        s.winner_run_ms += e.pinned_ms;
      }
      continue;
    }
    if (e.outcome != trace::PinOutcome::kBudgeted) continue;
    s.active = true;
    ++s.budgeted;
    if (e.legacy) ++s.budgeted_legacy;
    s.budgeted_no_fallback += e.no_fallback;
    problems.insert(e.problem_hash);
    if (e.search_ms > 0) s.expected_ms += e.search_ms;
    if (s.first_share_pct < 0 && e.pinned_ms >= 0) s.first_share_pct = e.pinned_ms;
  }
  s.budgeted_problems = int(problems.size());
  for (const auto& r : p.searches) {
    double ms = r.end_ns > r.start_ns ? double(r.end_ns - r.start_ns) / 1e6 : 0;
    if (r.steered == trace::PinOutcome::kBudgeted) {
      s.took_ms += ms;
      s.took_wait_ms += double(r.wait_ns) / 1e6;
      s.took_build_ms += double(r.build_ns) / 1e6;
      s.took_launch_ms += double(r.launch_ns) / 1e6;
      s.took_heur_ms += double(r.heur_ns) / 1e6;
    } else if (r.benchmark() && !r.was_steered()) {
      ++s.searches;
      s.search_ms += ms;
    }
  }
  if (p.last_ns > p.job_start_ns) s.job_ms = double(p.last_ns - p.job_start_ns) / 1e6;
  return s;
}

namespace {
// "2.4 ms" under a second, "1.23 s" from there.
std::string duration(double ms) { return ms < 1000 ? fmt::format("{:.1f} ms", ms) : fmt::format("{:.2f} s", ms / 1e3); }
}  // namespace

std::string budget_text(const BudgetSummary& s) {
  if (!s.active) return "";
  std::string out = fmt::format("search budget {:g}%: ", s.budget_pct);
  if (s.budgeted == 0) {
    out += "never reached (every selection searched as usual)";
  } else {
    out +=
        fmt::format("{} selection{} ({} problem{}) took cuDNN's heuristic choice instead of a benchmark search",
                    s.budgeted, s.budgeted == 1 ? "" : "s", s.budgeted_problems, s.budgeted_problems == 1 ? "" : "s");
    if (s.budgeted_legacy > 0) out += fmt::format(" ({} of them legacy cudnnFind calls)", s.budgeted_legacy);
    out += fmt::format(", from a time the searches had taken {:.1f}% of the job's time; ", s.first_share_pct);
    out += fmt::format(
        "about {} of searching saved (each at the mean the process's searches had taken so far), "
        "{} spent choosing them",
        duration(s.expected_ms), duration(s.took_ms));
    double parts = s.took_wait_ms + s.took_build_ms + s.took_launch_ms + s.took_heur_ms;
    if (s.took_ms > 0 && parts > 0) {
      out += fmt::format(
          " ({} waiting for the device in timing runs, {} building plans, {} launching runs, {} in cuDNN's "
          "heuristics queries, {} in the framework)",
          duration(s.took_wait_ms), duration(s.took_build_ms), duration(s.took_launch_ms), duration(s.took_heur_ms),
          duration(std::max(0.0, s.took_ms - parts)));
    }
  }
  if (s.searched_later > 0) {
    out += fmt::format("; {} searched later, when their plans kept running and the budget allowed ({})",
                       s.searched_later, duration(s.searched_later_ms));
    if (s.searched_later_moved > 0 && s.winner_run_ms > 0) {
      out += fmt::format(": {} moved to a faster plan, the heuristic plans took {:.2f}x the winners' time per run",
                         s.searched_later_moved, s.heuristic_run_ms / s.winner_run_ms);
    } else {
      out += ": cuDNN's heuristic choice was the fastest each time";
    }
  }
  if (s.searches > 0 && s.job_ms > 0) {
    out += fmt::format("; {} search{} ran, {}, {:.1f}% of the job's time", s.searches, s.searches == 1 ? "" : "es",
                       duration(s.search_ms), 100.0 * s.search_ms / s.job_ms);
  }
  return out;
}

nlohmann::json budget_json(const BudgetSummary& s) {
  if (!s.active) return nullptr;
  auto or_null = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {
      {"budget_pct", or_null(s.budget_pct)},
      {"budgeted", s.budgeted},
      {"budgeted_problems", s.budgeted_problems},
      {"budgeted_legacy", s.budgeted_legacy},
      {"budgeted_without_fallback", s.budgeted_no_fallback},
      {"share_when_first_budgeted_pct", or_null(s.first_share_pct)},
      {"searches_saved_s", s.expected_ms / 1e3},
      {"budgeted_selections_s", s.took_ms / 1e3},
      {"budgeted_selections_breakdown_s",
       {{"waiting", s.took_wait_ms / 1e3},
        {"building", s.took_build_ms / 1e3},
        {"launching", s.took_launch_ms / 1e3},
        {"heuristics", s.took_heur_ms / 1e3},
        {"other", std::max(0.0, s.took_ms - s.took_wait_ms - s.took_build_ms - s.took_launch_ms - s.took_heur_ms) /
                      1e3}}},
      {"searches", s.searches},
      {"searches_s", s.search_ms / 1e3},
      {"searched_later", s.searched_later},
      {"searched_later_moved", s.searched_later_moved},
      {"searched_later_s", s.searched_later_ms / 1e3},
      {"heuristic_over_winner",
       s.winner_run_ms > 0 ? nlohmann::json(s.heuristic_run_ms / s.winner_run_ms) : nlohmann::json(nullptr)},
      {"searches_share_pct", s.job_ms > 0 ? nlohmann::json(100.0 * s.search_ms / s.job_ms) : nlohmann::json(nullptr)},
      {"text", budget_text(s)}};
}

}  // namespace cuprobe::analysis
