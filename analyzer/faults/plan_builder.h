// Fault plans as `cuprobe record` builds them: from --fault specs, from a --faults JSON file,
// and from the injected calls of an earlier trace (--replay-faults). The result is the text the
// shim reads from CUPROBE_FAULTS, checked with the shim's own parser (common/fault_plan.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cuprobe::faults {

// Why a plan was refused: names the rule and the offending part.
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Joins rules into one plan text and checks it; throws PlanError.
std::string check_plan(const std::vector<std::string>& rules);
// Checks a memory cap (8GiB, 25%, 0=8GiB,1=16GiB); throws PlanError.
void check_mem_cap(const std::string& cap);

// A --faults file: {"rules": [RULE...], "mem_cap": "8GiB"} or a bare [RULE...]. A RULE is a spec
// string, or an object {"calls": "alloc", "error": "OOM", "nth": 3, "problem": "...", ...} whose
// keys are the spec's keys (problem_regex for problem~, min_size for size>=). Throws PlanError.
struct FileRules {
  std::vector<std::string> rules;
  std::string mem_cap;
};
FileRules rules_from_json(const nlohmann::json& doc, const std::string& source);

// The faults an earlier run injected, as rules that inject exactly those calls again: each rule
// keeps its filters and fires at the recorded match numbers (at=...). The memory cap of that run
// comes back too, so that cudaMemGetInfo answers as it did. Throws PlanError.
struct Replay {
  std::vector<std::string> rules;
  std::string mem_cap;
  size_t injected = 0;           // calls the earlier run had replaced
  std::vector<std::string> notes;  // what could not be reproduced exactly
};
Replay replay_from_trace(const std::string& path);

// The memory cap's bytes on each device of `totals` (device -> its memory); none on a device
// the cap does not limit, or when the text does not parse.
std::map<int, uint64_t> mem_cap_bytes(const std::string& cap, const std::map<int, uint64_t>& totals);

// A rule's text without its triggers (nth, every, first, after, at, p, seed, max): what makes a
// call match it, and its name.
std::string rule_filters(const std::string& rule);

// Whether a rule's ERROR is DELAY (a fired call waits, then runs as usual); false for a rule that
// does not parse.
bool rule_is_delay(const std::string& rule);

}  // namespace cuprobe::faults
