// sync-stall: time the host spent blocked in device, stream and event synchronization outside
// cuDNN's own searches (whose synchronizations are part of their cost).
#include <algorithm>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void sync_stall(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_share = spec.param("min_share");
  double min_seconds = spec.param("min_seconds");
  for (const ProcessFacts& p : all.processes) {
    uint64_t total = 0;
    std::vector<std::pair<uint64_t, std::string>> parts;
    for (const auto& [api, ns] : p.sync_ns) {
      total += ns;
      parts.emplace_back(ns, api);
    }
    double span = span_s(p);
    double share = span > 0 ? seconds(total) / span : 0;
    if (share < min_share || seconds(total) < min_seconds) continue;
    std::sort(parts.rbegin(), parts.rend());
    std::string breakdown;
    nlohmann::json by_api = nlohmann::json::object();
    for (const auto& [ns, api] : parts) {
      breakdown += fmt::format("{}{} {:.2f} s", breakdown.empty() ? "" : ", ", api, seconds(ns));
      by_api[api] = seconds(ns);
    }
    nlohmann::json ev = {{"process", process_label(p)}, {"blocked_s", seconds(total)}, {"share", share},
                         {"run_s", span},               {"breakdown", breakdown},     {"by_api", by_api}};
    Finding f = make_finding(spec, ev, seconds(total));
    if (share >= spec.param("warning_share")) f.severity = Severity::kWarning;
    f.pids.push_back(p.pid);
    emit(std::move(f));
  }
}

const RegisterRule kRegister("sync-stall", sync_stall);

}  // namespace
}  // namespace cuprobe::analysis
