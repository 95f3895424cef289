// Running an analysis: read every trace (binary files in parallel, one pass each), apply the
// rules, and build the report: a summary of the job and the findings ordered by severity and
// estimated impact.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/rules.h"

namespace cuprobe::analysis {

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::vector<std::string> rule_dirs;  // the default directory first, then --rules
  std::vector<std::string> settings;   // RULE.PARAM=VALUE
  std::vector<std::string> only_rules; // empty: all
  int threads = 0;                     // 0: one per core
  std::vector<std::string> symbol_dirs;  // --symbols: where else the traced binaries are
};

// What the timelines of a process need of its facts beyond the summary (exports, the report).
struct ProcessTimes {
  uint32_t pid = 0;
  std::string host;
  std::string label;                   // process_label
  int rank = -1;
  uint64_t job_start_wall_ns = 0;      // the job's first work (facts.h job_start_ns), wall clock
  std::vector<uint64_t> step_wall_ns;  // step starts (facts.h step_starts), wall clock
};

struct Report {
  nlohmann::json summary;
  std::vector<ProcessTimes> processes;  // in the summary's order
  std::vector<Finding> findings;
  std::vector<std::string> warnings;  // unreadable inputs, damaged traces
};

Result<Report> analyze(const AnalyzeOptions& options);

// The program a process ran, as people call it: the script or module a Python interpreter ran
// ("torchrun", "torch.distributed.run"), else the executable's file name (engine.cpp).
std::string program_name(const std::vector<std::string>& argv);

nlohmann::json findings_json(const std::vector<Finding>& findings);
// The order findings are reported in (RunEvent, then severity, then time lost).
bool finding_before(const Finding& a, const Finding& b);
// Prints the report as text; every string that can hold a trace's bytes is made safe for a
// terminal first (control characters escaped: utf8::terminal_safe).
// With 16 processes or more (rank_groups.h), the summary lists groups of processes alike and the
// outliers; `per_rank` lists every process instead.
void print_report(const Report& report, bool color, FILE* out, bool per_rank = false);
// Every string of `j`, keys included, as a terminal may show it (utf8::terminal_safe).
nlohmann::json terminal_json(const nlohmann::json& j);

}  // namespace cuprobe::analysis
