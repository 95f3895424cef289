// Jobs of many ranks summarized (issue 30): processes that look alike (program, how they ended,
// GPU model, CUDA and cuDNN versions, searches, the plans their problems ran with, memory within
// a tolerance) form a group reported once; the others are outliers, each with what makes it
// differ from its group. The text and HTML summaries show groups and outliers from 16 processes
// on (kGroupFrom); JSON keeps every process in summary.per_process and adds summary.rank_groups
// (docs/analyze-json.md).
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/facts.h"

namespace cuprobe::analysis {

inline constexpr size_t kGroupFrom = 16;  // listed processes from which summaries group them

// summary.rank_groups for the processes (per_process[i] is processes[i]'s entry; launchers are
// left out of groups); null with fewer than kGroupFrom listed processes.
nlohmann::json rank_groups(const std::vector<ProcessFacts>& processes, const nlohmann::json& per_process);

// "0-16, 18, 20-1023": ranks (sorted, distinct) as ranges.
std::string rank_ranges(std::vector<int> ranks);

}  // namespace cuprobe::analysis
