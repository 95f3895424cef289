// memory-coverage: the device said more of its memory was in use than cuprobe saw allocated.
// Every other memory finding rests on what the trace holds; this one checks that premise per
// device, from the memory samples the shim takes (mem_sample.h): the growth, since the first
// sample, of (used on the device - live allocations cuprobe saw). Memory used before the
// process allocated (its context, other processes already there) is the baseline, not a gap.
// Other traced processes of the job on the same GPU (ranks sharing one device) explain a gap up
// to their own peak: then the finding is information, naming them.
#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

std::string uuid_of(const ProcessFacts& p, int device) {
  if (p.trace == nullptr) return "";
  auto it = p.trace->devices().find(device);
  return it == p.trace->devices().end() ? "" : it->second.uuid;
}

void memory_coverage(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  uint64_t min_bytes = uint64_t(spec.param("min_gib") * double(1ull << 30));
  double min_share = spec.param("min_share");
  for (const ProcessFacts& p : all.processes) {
    for (const auto& [d, c] : p.coverage) {
      if (c.samples < 2 || c.total == 0) continue;
      uint64_t threshold = std::max(min_bytes, uint64_t(min_share * double(c.total)));
      if (c.max_unaccounted < threshold) continue;
      // The job's other processes on this GPU, and the most they held.
      std::string uuid = uuid_of(p, d);
      uint64_t others_peak = 0;
      std::vector<std::string> others;
      for (const ProcessFacts& q : all.processes) {
        if (&q == &p || uuid.empty()) continue;
        for (const auto& [qd, m] : q.memory) {
          if (uuid_of(q, qd) != uuid) continue;
          others_peak += m.peak;
          others.push_back(process_label(q));
        }
      }
      bool explained = !others.empty() && c.max_unaccounted <= others_peak + threshold;
      std::string shared;
      for (const auto& o : others) shared += (shared.empty() ? "" : ", ") + o;
      nlohmann::json ev = {{"process", process_label(p)},
                           {"device", device_name(p, d)},
                           {"unaccounted", c.max_unaccounted},
                           {"used", c.used_then},
                           {"seen", c.seen_then},
                           {"baseline", c.baseline_gap},
                           {"total", c.total},
                           {"at_s", c.max_ts_ns > p.first_ns ? seconds(c.max_ts_ns - p.first_ns) : 0.0},
                           {"last_unaccounted", c.last_unaccounted},
                           {"samples", c.samples},
                           {"shared_with", shared},
                           {"shared_peak", others_peak},
                           {"explained_by_job", explained},
                           {"pools_sampled", c.pools_sampled}};
      Finding f = make_finding(spec, ev, 0);  // bytes, not time: no time lost to order by
      if (c.max_ts_ns != 0) f.at_wall_ns = p.trace->wall_ns(c.max_ts_ns);
      if (explained) {
        f.severity = Severity::kInfo;
        f.message += fmt::format("; explained: {} of this job use{} the same GPU (together up to {})", shared,
                                 others.size() == 1 ? "s" : "", human_bytes(others_peak));
      } else if (!others.empty()) {
        f.message += fmt::format("; {} of this job share{} the GPU (up to {}), which does not explain it all", shared,
                                 others.size() == 1 ? "s" : "", human_bytes(others_peak));
      }
      f.pids.push_back(p.pid);
      emit(std::move(f));
    }
  }
}

const RegisterRule kRegister("memory-coverage", memory_coverage);

}  // namespace
}  // namespace cuprobe::analysis
