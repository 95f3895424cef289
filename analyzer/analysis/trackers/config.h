// How each process was configured (facts.h ProcessConfig): how it chose its plans (benchmark
// search, heuristics, legacy Find or Get), the numerical notes its candidates carried, and, at the
// end, its library versions, GPU models and mapped CUDA libraries. It listens to the searches as
// they close, so it does no work per call.
//
// infer_settings then reads the processes of one job side by side: cudnn.benchmark, deterministic
// mode and TF32 leave no record of their own, only of what PyTorch's engine filter
// (Conv_v8.cpp) let through, which one process cannot tell from what cuDNN offered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

class ConfigTracker {
 public:
  ConfigTracker(const reader::Trace& trace, SearchesTracker& searches);
  ConfigTracker(const ConfigTracker&) = delete;  // `searches` calls back into this one
  ConfigTracker& operator=(const ConfigTracker&) = delete;
  void on_event(const reader::Event&, const ApiView&) {}
  // config: the selections seen, with the trace's properties, devices and modules.
  void finish(ProcessFacts& f);

 private:
  void on_search(const reader::SearchRecord& r);

  const reader::Trace& trace_;
  ProcessConfig config_;
};

// A setting as far as the traces tell: on, off, or not known.
enum class Setting : int8_t { kUnknown = -1, kOff = 0, kOn = 1 };

struct ProcessSettings {
  Setting benchmark = Setting::kUnknown;      // timed searches seen: on; only heuristic selections: off
  Setting legacy_api = Setting::kUnknown;     // selections through cudnnFind*/cudnnGet*: on; backend only: off
  Setting deterministic = Setting::kUnknown;
  Setting tf32 = Setting::kUnknown;           // for float32 convolutions
  std::string selection;  // "benchmark", "heuristics", "benchmark and heuristics", "legacy Find", ..., "" none
  std::string deterministic_why;
  std::string tf32_why;
};

// The settings of each process of `processes` (one job), in their order.
std::vector<ProcessSettings> infer_settings(const std::vector<ProcessFacts>& processes);

// "13.0" for CUDA's encoding (major * 1000 + minor * 10), "9.19.0" for cuDNN 9's (major * 10000 +
// minor * 100 + patch; cuDNN 8's major * 1000 + minor * 100 + patch); "unknown" for -1.
std::string cuda_version_text(int64_t v);
std::string cudnn_version_text(int64_t v);
// A process as findings about a job name it: "rank 1", or "pid 4242" when the rank is unknown.
std::string short_process_name(const ProcessFacts& p);
// Several processes, as short: "ranks 0-8, 10-23" (rank_ranges), then the unranked by pid.
std::string short_process_names(const std::vector<const ProcessFacts*>& processes);

}  // namespace cuprobe::analysis
