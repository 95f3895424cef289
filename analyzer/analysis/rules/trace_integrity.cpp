// trace-integrity: a process's trace lacks calls the process made (the shim dropped them at the
// size limit or a full disk) or holds records the reader could not use. Every other rule reads
// the trace as the whole story; this one says when it is not.
#include <fmt/format.h>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void trace_integrity(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_share = spec.param("min_dropped_share");
  uint64_t min_damaged = uint64_t(std::max(1.0, spec.param("min_damaged")));
  for (const ProcessFacts& p : all.processes) {
    const reader::Trace& t = *p.trace;
    uint64_t dropped = t.stat(trace::kStatDroppedEvents);
    uint64_t damaged = t.damaged_records();
    uint64_t made = p.events + dropped;
    double share = made > 0 ? double(dropped) / double(made) : 0.0;
    std::vector<std::string> what;
    if (dropped > 0 && share >= min_share) {
      std::string cause = t.stat(trace::kStatTraceLimitHit) != 0
                              ? "the trace reached its size limit (CUPROBE_MAX_MB)"
                          : t.stat(trace::kStatGrowFailures) != 0
                              ? fmt::format("the trace file could not grow ({} failures: a full disk or a quota)",
                                            t.stat(trace::kStatGrowFailures))
                              : "the shim had no room to write them";
      what.push_back(fmt::format("{} of the {} calls it made ({:.1f}%) were not recorded: {}", dropped, made,
                                 share * 100, cause));
    }
    if (uint64_t lost = t.stat(trace::kStatKeptDropped); lost > 0) {
      what.push_back(fmt::format("{} record{} of the kinds the flight recorder always keeps (searches, plan selections, "
                                 "failures, allocations, stacks) could not be written: the trace reached its size limit "
                                 "(CUPROBE_MAX_MB){}",
                                 lost, lost == 1 ? "" : "s",
                                 t.coverage().ring_bytes != 0 ? " with its ring at the smallest it can be" : ""));
    }
    const reader::Trace::Integrity& integrity = t.integrity();
    if (integrity.skipped_chunks > 0) {
      what.push_back(fmt::format("{} chunk{} of the trace could not be read at all (the first: {})",
                                 integrity.skipped_chunks, integrity.skipped_chunks == 1 ? "" : "s",
                                 integrity.first_chunk));
    }
    if (integrity.resyncs > 0) {
      what.push_back(fmt::format("{} stretch{} of damaged records{} skipped to reach the next readable record (the "
                                 "first: {})",
                                 integrity.resyncs, integrity.resyncs == 1 ? "" : "es",
                                 integrity.skipped_bytes > 0 ? fmt::format(" ({} bytes)", integrity.skipped_bytes) : "",
                                 integrity.first_resync));
    }
    if (integrity.inconsistent > 0) {
      what.push_back(fmt::format("{} inconsistenc{} in how the trace's chunks are numbered, sized or claimed (the "
                                 "first: {})",
                                 integrity.inconsistent, integrity.inconsistent == 1 ? "y" : "ies",
                                 integrity.first_inconsistent));
    }
    if (damaged >= min_damaged) {
      what.push_back(fmt::format("{} record{} of the trace could not be read (damaged or cut short; the notes above "
                                 "name them)",
                                 damaged, damaged == 1 ? "" : "s"));
    }
    if (what.empty()) continue;
    std::string text = what[0];
    for (size_t i = 1; i < what.size(); ++i) text += "; " + what[i];
    std::string covered;
    if (p.events > 0 && p.last_ns > p.first_ns) {
      covered = fmt::format(" ({} calls over {:.2f} s)", p.events, seconds(p.last_ns - p.first_ns));
    }
    nlohmann::json ev = {{"process", process_label(p)},
                         {"what", text},
                         {"covered", covered},
                         {"dropped_events", dropped},
                         {"dropped_share", share},
                         {"recorded_events", p.events},
                         {"damaged_records", damaged},
                         {"skipped_chunks", integrity.skipped_chunks},
                         {"resynchronized", integrity.resyncs},
                         {"skipped_bytes", integrity.skipped_bytes},
                         {"inconsistencies", integrity.inconsistent},
                         {"trace_limit_hit", t.stat(trace::kStatTraceLimitHit) != 0},
                         {"kept_dropped", t.stat(trace::kStatKeptDropped)},
                         {"grow_failures", t.stat(trace::kStatGrowFailures)}};
    Finding f = make_finding(spec, ev, 0);
    f.pids.push_back(p.pid);
    emit(std::move(f));
  }
}

const RegisterRule kRegister("trace-integrity", trace_integrity);

}  // namespace
}  // namespace cuprobe::analysis
