// Rules: their data (rules/<id>.json: severity, thresholds, message template, rationale, fix,
// references) and their matching logic (one file per rule in analysis/rules/, registered by id).
// Everything a user may want to tune lives in the data; `--rules DIR` adds or overrides rule
// files and `--set RULE.PARAM=VALUE` changes a threshold.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/facts.h"
#include "trace/symbolize.h"
#include "trace/result.h"

namespace cuprobe::analysis {

enum class Severity { kInfo = 0, kWarning = 1, kError = 2 };
const char* severity_name(Severity s);
Result<Severity> parse_severity(const std::string& s);

struct Param {
  double value = 0;
  std::string description;
};

struct RuleSpec {
  std::string id;
  std::string title;
  Severity severity = Severity::kWarning;
  std::string message;  // template: {name} or {name:pct|bytes|ms|s} from the evidence
  std::string rationale;
  std::string fix;
  std::vector<std::string> references;
  std::map<std::string, Param> params;
  // Fixes by the cause or pattern a finding names ("fixes" in the file: research-storm's patterns,
  // algo-divergence's causes, env-drift's kinds); `fix` is the general one.
  std::map<std::string, std::string> fixes;
  std::string file;  // where it was loaded from

  double param(const std::string& name) const;  // throws std::out_of_range naming the rule
  const std::string& fix_for(const std::string& key) const;  // fixes[key], else fix
};

// What a finding is about, as the order of a post-mortem sees it: the event that ended the run
// first (a fatal out-of-memory error, a process that died), then failures the job saw and went
// on after (a caught out-of-memory error, cuDNN failures that reached the application), then
// everything else; within each, by severity, then by the time it cost.
enum class RunEvent { kNone = 0, kFailure = 1, kEndedRun = 2 };

struct Finding {
  std::string rule;
  Severity severity = Severity::kWarning;
  std::string title;
  std::string message;
  nlohmann::json evidence = nlohmann::json::object();
  std::vector<std::string> problems;  // problem signatures involved
  std::vector<std::string> call_sites;  // where in the application, Python lines first
  std::vector<uint32_t> pids;
  std::string fix;
  double impact_s = 0;  // estimated time lost, for ordering; a time, never another quantity
  // Whether it is about an event that failed or ended the run, which a post-mortem reads first.
  RunEvent run_event = RunEvent::kNone;
  // When what it concerns happened (wall clock, Unix epoch ns), for timelines; 0 when the
  // finding is about the whole job. The exports place it at the first process's start then.
  uint64_t at_wall_ns = 0;
};

// Expands {name} and {name:fmt} placeholders from `values`.
std::string render(const std::string& tmpl, const nlohmann::json& values);

// Loads every rules/*.json in `dirs`, later directories overriding earlier ones by id.
Result<std::map<std::string, RuleSpec>> load_rules(const std::vector<std::string>& dirs);
// Applies RULE.PARAM=VALUE; errors name the unknown rule or parameter.
Result<bool> apply_setting(std::map<std::string, RuleSpec>& rules, const std::string& setting);

struct AllFacts {
  std::vector<ProcessFacts> processes;
  reader::Symbolizer* symbols = nullptr;  // offline symbolization of the stacks findings cite
};

using Emit = std::function<void(Finding)>;
// The matching logic of one rule.
using RuleFn = std::function<void(const RuleSpec&, const AllFacts&, const Emit&)>;
const std::map<std::string, RuleFn>& rule_registry();

// Registers a rule's logic at static-initialization time (analysis/rules/*.cpp).
struct RegisterRule {
  RegisterRule(const std::string& id, RuleFn fn);
};

// A finding pre-filled from the rule's data, its message rendered from `evidence`.
Finding make_finding(const RuleSpec& spec, nlohmann::json evidence, double impact_s);

// Where the installed or source rules are: $CUPROBE_RULES, <bin>/../share/cuprobe/rules, or
// the source tree's rules/ (for the build tree).
std::string default_rules_dir();

}  // namespace cuprobe::analysis
