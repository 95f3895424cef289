// The search budget's account of a process: see search_budget.h.
#include "analysis/search_budget.h"

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
    if (e.outcome != trace::PinOutcome::kBudgeted) continue;
    s.active = true;
    ++s.budgeted;
    if (e.legacy) ++s.budgeted_legacy;
    problems.insert(e.problem_hash);
    if (e.search_ms > 0) s.expected_ms += e.search_ms;
    if (s.first_share_pct < 0 && e.pinned_ms >= 0) s.first_share_pct = e.pinned_ms;
  }
  s.budgeted_problems = int(problems.size());
  for (const auto& r : p.searches) {
    double ms = r.end_ns > r.start_ns ? double(r.end_ns - r.start_ns) / 1e6 : 0;
    if (r.steered == trace::PinOutcome::kBudgeted) {
      s.took_ms += ms;
    } else if (r.benchmark() && !r.was_steered()) {
      ++s.searches;
      s.search_ms += ms;
    }
  }
  if (p.last_ns > p.job_start_ns) s.job_ms = double(p.last_ns - p.job_start_ns) / 1e6;
  return s;
}

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
        "about {:.2f} s of searching saved (each at the mean the process's searches had taken so far), "
        "{:.2f} s spent choosing them",
        s.expected_ms / 1e3, s.took_ms / 1e3);
  }
  if (s.searches > 0 && s.job_ms > 0) {
    out += fmt::format("; {} search{} ran, {:.2f} s, {:.1f}% of the job's time", s.searches,
                       s.searches == 1 ? "" : "es", s.search_ms / 1e3, 100.0 * s.search_ms / s.job_ms);
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
      {"share_when_first_budgeted_pct", or_null(s.first_share_pct)},
      {"searches_saved_s", s.expected_ms / 1e3},
      {"budgeted_selections_s", s.took_ms / 1e3},
      {"searches", s.searches},
      {"searches_s", s.search_ms / 1e3},
      {"searches_share_pct", s.job_ms > 0 ? nlohmann::json(100.0 * s.search_ms / s.job_ms) : nlohmann::json(nullptr)},
      {"text", budget_text(s)}};
}

}  // namespace cuprobe::analysis
