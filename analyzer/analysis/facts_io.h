// Facts files (issue 30): a process's ProcessFacts written out and read back, so that analysis
// can run on what `cuprobe facts` reduced on the node that holds the traces instead of on the
// traces themselves. A facts file is JSON Lines (zstd-packed): the metadata lines `cuprobe dump`
// writes for each process (process, APIs, problems, fault rules, modules, stacks with their call
// sites resolved on the node, counts, pins, crashes) and no calls; then its facts as "facts"
// lines, one per part of ProcessFacts (long lists split over several lines). The JSON Lines
// reader keeps the facts lines with the process (reader::Trace::facts); the analysis reads them
// with facts_from_json instead of passing over calls it does not have.
//
// The format is versioned (kFactsVersion): a file of another version is refused with what to do,
// never read as something else. docs/trace-format.md, "Facts files", has the lines.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/facts.h"
#include "trace/result.h"

namespace cuprobe::analysis {

inline constexpr int kFactsVersion = 1;

// The parts of `f` as facts lines' payloads: (key, value) in order; an array value longer than
// kFactsItemsPerLine is split over several parts of the same key (their items appended in order).
inline constexpr size_t kFactsItemsPerLine = 256;  // well inside the JSON Lines reader's limits per line
void facts_parts(const ProcessFacts& f,
                 const std::function<void(const std::string& key, nlohmann::json value, bool items)>& emit);

// ProcessFacts from the facts a trace read from a facts file holds (Trace::facts, the parts
// merged), its pointers into `trace` rebound (problems by text). An error names what is missing or
// of another version.
Result<ProcessFacts> facts_from_json(const nlohmann::json& facts, const reader::Trace& trace);

// A process's facts whatever the trace is: read from a facts file's lines, or gathered from its
// calls (gather_facts).
Result<ProcessFacts> facts_of(const reader::Trace& trace, const FactOptions& options);

}  // namespace cuprobe::analysis
