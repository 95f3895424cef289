// Plan pinning's account of a process: see pinning.h.
#include "analysis/pinning.h"

#include <set>

#include <fmt/format.h>

#include "analysis/common.h"

namespace cuprobe::analysis {

int PinSummary::asides_total() const {
  int n = 0;
  for (const auto& [k, v] : asides) n += v;
  return n;
}

PinSummary pin_summary(const ProcessFacts& p) {
  PinSummary s;
  if (p.trace == nullptr) return s;
  const reader::Trace& t = *p.trace;
  if (auto it = t.properties().find(uint32_t(trace::Property::kPinnedPlans)); it != t.properties().end()) {
    s.active = true;
    s.plans_in_file = it->second;
  }
  std::set<uint64_t> problems;
  for (const auto& e : t.pins()) {
    if (e.outcome == trace::PinOutcome::kBudgeted || e.outcome == trace::PinOutcome::kSearchedLater) {
      continue;  // the search budget's (search_budget.h)
    }
    s.active = true;
    ++s.selections;
    const trace::PinOutcome outcome = e.outcome;
    if (e.outcome == trace::PinOutcome::kPinned) {
      ++s.pinned;
      if (e.answered) ++s.answered;
      problems.insert(e.problem_hash);
      if (e.search_ms >= 0) {
        s.saved_ms += e.search_ms;
        ++s.saved_known;
      }
      s.state.try_emplace(e.problem_hash, trace::PinOutcome::kPinned);
    } else {
      ++s.asides[outcome];
      const reader::Problem* pr = t.problem(e.problem);
      s.aside_example.try_emplace(outcome, pr ? pr->text : fmt::format("0x{:016x}", e.problem_hash));
      s.state[e.problem_hash] = outcome;  // a failure after pinning is what counts
    }
  }
  s.pinned_problems = int(problems.size());
  for (const auto& r : p.searches) {
    if (problems.count(r.problem_hash) && r.end_ns > r.start_ns) s.took_ms += double(r.end_ns - r.start_ns) / 1e6;
    if (s.active && !s.state.count(r.problem_hash)) ++s.not_in_file;
  }
  return s;
}

bool PinSummary::ByName::operator()(trace::PinOutcome a, trace::PinOutcome b) const {
  return std::strcmp(reader::name_of(a), reader::name_of(b)) < 0;
}

namespace {

const char* aside_meaning(trace::PinOutcome outcome) {
  switch (outcome) {
    case trace::PinOutcome::kNotOffered: return "cuDNN did not offer the pinned plan";
    case trace::PinOutcome::kSkipped:
      return "the application passed the pinned plan by (its filters: deterministic, TF32)";
    case trace::PinOutcome::kOtherGpu: return "the file pins them for another GPU model";
    case trace::PinOutcome::kOtherCudnn: return "the file pins them for another cuDNN version";
    case trace::PinOutcome::kOtherAlignment: return "the file pins them for other data alignments";
    case trace::PinOutcome::kPinnedFailed: return "the pinned plan failed here";
    case trace::PinOutcome::kBroken: return "the pinned plan had failed earlier in the process";
    default: return "";
  }
}

}  // namespace

std::string pin_text(const PinSummary& s) {
  if (!s.active) return "";
  if (s.plans_in_file == 0) return "the plan file could not be used (the shim's warning on stderr says why): nothing was pinned";
  std::string out = fmt::format("{} of {} selection{} of problems in the plan file ended on the pinned plan after one "
                                "candidate ({} problem{})",
                                s.pinned, s.selections, s.selections == 1 ? "" : "s", s.pinned_problems,
                                s.pinned_problems == 1 ? "" : "s");
  if (s.answered > 0) {
    out += fmt::format(", {} of them with cuDNN's heuristics query answered by the shim", s.answered);
  }
  if (s.pinned > 0 && s.saved_known > 0) {
    out += fmt::format("; the searches they replace took {:.2f} s in the run the plans came from, {:.2f} s here",
                       s.saved_ms / 1e3, s.took_ms / 1e3);
  }
  if (s.not_in_file > 0) {
    out += fmt::format("; {} selection{} of problems not in the file chose as usual (cuprobe record --pin-plans-learn "
                       "adds them)",
                       s.not_in_file, s.not_in_file == 1 ? "" : "s");
  }
  if (int n = s.asides_total(); n > 0) {
    out += fmt::format("; stepped aside for {}:", n);
    bool first = true;
    for (const auto& [outcome, count] : s.asides) {
      out += fmt::format("{} {} {} ({}, e.g. {})", first ? "" : ",", count, reader::name_of(outcome), aside_meaning(outcome),
                         s.aside_example.at(outcome).substr(0, 80));
      first = false;
    }
  }
  return out;
}

nlohmann::json pin_json(const PinSummary& s) {
  if (!s.active) return nullptr;
  nlohmann::json asides = nlohmann::json::object();
  for (const auto& [k, v] : s.asides) asides[reader::name_of(k)] = {{"selections", v}, {"example", s.aside_example.at(k)}};
  return {{"plans_in_file", s.plans_in_file},
          {"selections", s.selections},
          {"pinned", s.pinned},
          {"pinned_problems", s.pinned_problems},
          {"heuristics_answered", s.answered},
          {"searches_replaced_s", s.saved_known ? nlohmann::json(s.saved_ms / 1e3) : nlohmann::json(nullptr)},
          {"pinned_selections_s", s.took_ms / 1e3},
          {"stepped_aside", asides},
          {"not_in_file", s.not_in_file},
          {"text", pin_text(s)}};
}

}  // namespace cuprobe::analysis
