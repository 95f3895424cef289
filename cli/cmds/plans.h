// What `cuprobe plans export` computes, for other commands (cuprobe diff: a plan file against a run).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/result.h"

namespace cuprobe::cli {

// The plans the runs ran as `cuprobe plans export RUNS` writes them (format cuprobe-plans/1), in
// memory, pinned selections included (an export leaves those out); notes on unreadable inputs go
// to *warnings; an error when the runs hold no plan selection.
Result<nlohmann::json> exported_plans(const std::vector<std::string>& runs, std::vector<std::string>* warnings);

}  // namespace cuprobe::cli
