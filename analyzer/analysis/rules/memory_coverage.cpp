// memory-coverage: the device said more of its memory was in use than cuprobe saw allocated.
// Every other memory finding rests on what the trace holds; this one checks that premise per
// device, from the memory samples the shim takes (mem_sample.h): the growth, since the first
// sample, of (used on the device - live allocations cuprobe saw). Memory used before the
// process allocated (its context, other processes already there) is the baseline, not a gap.
#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void memory_coverage(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  uint64_t min_bytes = uint64_t(spec.param("min_gib") * double(1ull << 30));
  double min_share = spec.param("min_share");
  for (const ProcessFacts& p : all.processes) {
    for (const auto& [d, c] : p.coverage) {
      if (c.samples < 2 || c.total == 0) continue;
      uint64_t threshold = std::max(min_bytes, uint64_t(min_share * double(c.total)));
      if (c.max_unaccounted < threshold) continue;
      nlohmann::json ev = {{"process", process_label(p)},
                           {"device", device_name(p, d)},
                           {"unaccounted", c.max_unaccounted},
                           {"used", c.used_then},
                           {"seen", c.seen_then},
                           {"baseline", c.baseline_gap},
                           {"total", c.total},
                           {"at_s", c.max_ts_ns > p.first_ns ? seconds(c.max_ts_ns - p.first_ns) : 0.0},
                           {"last_unaccounted", c.last_unaccounted},
                           {"samples", c.samples}};
      Finding f = make_finding(spec, ev, double(c.max_unaccounted));
      f.pids.push_back(p.pid);
      emit(std::move(f));
    }
  }
}

const RegisterRule kRegister("memory-coverage", memory_coverage);

}  // namespace
}  // namespace cuprobe::analysis
