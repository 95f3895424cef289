// The per-process pass (see facts.h): a short driver over the trackers of analysis/trackers/,
// and the helpers facts.h declares.
#include "analysis/facts.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "analysis/trackers/api_view.h"
#include "analysis/trackers/calls.h"
#include "analysis/trackers/config.h"
#include "analysis/trackers/cudnn_failures.h"
#include "analysis/trackers/faults.h"
#include "analysis/trackers/memory.h"
#include "analysis/trackers/plan_use.h"
#include "analysis/trackers/searches.h"
#include "analysis/trackers/syncs.h"
#include "analysis/trackers/tracker.h"
#include "analysis/trackers/warmup.h"

namespace cuprobe::analysis {

ProcessFacts gather_facts(const reader::Trace& trace, const FactOptions& options) {
  ProcessFacts f;
  f.trace = &trace;
  f.warmup_fraction = options.warmup_fraction;
  f.pid = trace.pid();
  f.host = trace.process().hostname;
  f.rank = trace.process().rank;
  f.rank_source = f.rank >= 0 ? "env" : "";
  // Launchers that set no variable (torch.multiprocessing.spawn): the rank NCCL was given.
  if (auto it = trace.properties().find(uint32_t(trace::Property::kNcclRank));
      f.rank < 0 && it != trace.properties().end() && it->second >= 0 && it->second <= INT32_MAX) {
    f.rank = int(it->second);
    f.rank_source = "nccl";
  }

  const ApiViews views(trace);
  // One tracker per concern (analysis/trackers/). A tracker is given the trackers it reads at
  // construction, and comes after them in run_pass: each call reaches the trackers in that
  // order, and they finish in it.
  FaultTracker faults(trace);
  CallsTracker calls(trace);
  SearchesTracker searches(trace);
  WarmupTracker warmup(trace, searches, options);
  MemoryTracker memory(trace, searches, warmup);
  SyncTracker syncs(trace, searches);
  CudnnFailureTracker cudnn_failures(trace, searches);
  PlanUseTracker plans(trace, searches);
  ConfigTracker config(trace, searches);
  run_pass(trace, views, f, faults, calls, searches, warmup, memory, syncs, cudnn_failures, plans, config);
  return f;
}

std::string torch_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", double(n) / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.2f} MiB", double(n) / double(1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.2f} KiB", double(n) / double(1ull << 10));
  return fmt::format("{} bytes", n);
}

uint64_t torch_allocation_size(uint64_t rounded) {
  constexpr uint64_t kMiB = 1ull << 20;
  if (rounded <= kMiB) return 2 * kMiB;
  if (rounded < 10 * kMiB) return 20 * kMiB;
  return (rounded + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
}

}  // namespace cuprobe::analysis
