// plan-pinning: selections of problems the plan file names that the shim left to cuDNN (stepped
// aside), or a plan file the shim could not use. A run whose selections all ended on the pinned
// plans gets no finding: analyze's summary says what pinning did (analysis/pinning.h).
#include "analysis/common.h"
#include "analysis/pinning.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void plan_pinning(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  for (const ProcessFacts& p : all.processes) {
    PinSummary s = pin_summary(p);
    if (!s.active) continue;
    int asides = s.asides_total();
    std::string reasons;
    nlohmann::json by_reason = nlohmann::json::object();
    if (s.plans_in_file == 0) {
      reasons = "the plan file could not be used (the shim's warning on the job's stderr names the problem)";
    } else if (asides == 0) {
      continue;
    }
    for (const auto& [outcome, n] : s.asides) {
      reasons += fmt::format("{}{} {} (e.g. {})", reasons.empty() ? "" : "; ", n, reader::name_of(outcome),
                             s.aside_example.at(outcome).substr(0, 100));
      by_reason[reader::name_of(outcome)] = n;
    }
    std::string summary =
        s.plans_in_file == 0
            ? reasons
            : fmt::format("plan pinning stepped aside for {} of {} plan selections of problems in the plan file ({} "
                          "ended on the pinned plan): {}",
                          asides, s.selections, s.pinned, reasons);
    nlohmann::json ev = {{"process", process_label(p)}, {"summary", summary},   {"asides", asides},
                         {"selections", s.selections},  {"pinned", s.pinned},   {"reasons", reasons},
                         {"by_reason", by_reason},      {"plans_in_file", s.plans_in_file}};
    Finding f = make_finding(spec, ev, 0);  // a count of selections, not time lost
    f.pids.push_back(p.pid);
    emit(std::move(f));
  }
}

const RegisterRule kRegister("plan-pinning", plan_pinning);

}  // namespace
}  // namespace cuprobe::analysis
