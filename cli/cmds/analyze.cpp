// `cuprobe analyze`: runs the rules over run directories, trace files or dump JSON Lines and
// reports what went wrong, how much it cost and what to do. `cuprobe rules` lists the rules and
// `cuprobe explain RULE` prints one rule's rationale, thresholds and fix.
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/engine.h"
#include "cli.h"

namespace cuprobe::cli {

namespace {

constexpr const char* kHelp = R"(Usage: cuprobe analyze [options] PATH...

Analyzes traces and reports findings: cuDNN benchmark re-search storms (research-storm) and
repeated searches (research-repeat), cuDNN attention plans rebuilt for every new sequence
length (attention-rebuild), workspace blowups (workspace-blowup), the same problem
running different plans on different ranks or over time (algo-divergence), out-of-memory
post-mortems (oom-postmortem), unsupported configurations (unsupported-config), allocation
churn (allocation-churn), synchronization stalls (sync-stall), device memory cuprobe did not
see allocated (memory-coverage), plan pinning that stepped aside (plan-pinning), an
inconsistent CUDA/cuDNN environment across libraries or ranks (env-drift) and incomplete or
damaged traces (trace-integrity); `cuprobe rules` lists them, `cuprobe explain RULE` explains one.

PATH is a run directory, a trace file (packed or not), a facts file from `cuprobe facts`, or
JSON Lines from `cuprobe dump` ("-" reads them from standard input). Many PATHs (every rank,
every host) are analyzed as one job, aligned by wall clock. With 16 processes or more the
summary shows groups of processes alike and lists the outliers, each with what differs.

Options:
  --json               machine-readable report (schema: docs/analyze-json.md)
  --fail-on SEVERITY   exit 1 when a finding is at least SEVERITY: info, warning (default) or
                       error; exit 0 otherwise
  --rules DIR          also load rules from DIR (same id: DIR's file overrides)
  --set RULE.PARAM=V   change a rule's threshold, e.g. --set research-storm.min_late_searches=20
  --rule ID            run only this rule (repeatable)
  --threads N          traces read in parallel (default: one per core)
  --symbols DIR        also look for the traced process's binaries and their debug files
                       (DIR/.build-id/NN/REST.debug too) under DIR when naming call sites
                       (traces copied from another machine); repeatable; CUPROBE_SYMBOLS
  --color / --no-color colour the report (default: only on a terminal)
  --per-rank           list every process in the summary and every finding in full, however
                       many (by default, from 16 processes on: groups alike and outliers; a
                       rule's findings past its third on one line; --json always has all)
  -h, --help           this text

Traces are read as untrusted input: a damaged, truncated or half-copied trace is read as far as
it can be, and what was left out (records with impossible lengths, calls at impossible times,
calls of APIs the trace does not describe, lines that are not JSON, entries of a run directory
that are not regular files) is listed as notes ("warnings" in --json). A trace that lacks calls
(dropped at the size limit or on a full disk) or holds damaged records also gives a
trace-integrity finding: the other findings, and their absence, rest on part of the run.

Exit status: 0 no finding at or above --fail-on, 1 findings, 2 usage error or unreadable input.
)";

}  // namespace

int cmd_analyze(const Args& args) {
  analysis::AnalyzeOptions opt;
  opt.rule_dirs.push_back(analysis::default_rules_dir());
  bool json = false;
  int color = -1;
  bool per_rank = false;
  analysis::Severity fail_on = analysis::Severity::kWarning;
  OptionParser options(kHelp);
  options.flag("--json", [&] { json = true; });
  options.value("--fail-on", [&](const std::string& v) {
    auto s = analysis::parse_severity(v);
    if (!s) throw UsageError("--fail-on: " + s.error().message);
    fail_on = *s;
  });
  options.value("--rules", [&](const std::string& v) { opt.rule_dirs.push_back(v); });
  options.value("--set", [&](const std::string& v) { opt.settings.push_back(v); });
  options.value("--rule", [&](const std::string& v) { opt.only_rules.push_back(v); });
  options.value("--threads", [&](const std::string& v) { opt.threads = int(parse_count("--threads", v)); });
  options.value("--symbols", [&](const std::string& v) { opt.symbol_dirs.push_back(v); });
  options.flag("--color", [&] { color = 1; });
  options.flag("--no-color", [&] { color = 0; });
  options.flag("--per-rank", [&] { per_rank = true; });
  if (!options.parse(args, &opt.paths)) return kExitOk;
  if (opt.paths.empty()) throw UsageError("no trace given; usage: cuprobe analyze PATH...");
  auto report = analysis::analyze(opt);
  if (!report) {
    fmt::print(stderr, "cuprobe analyze: {}\n", report.error().message);
    return kExitUsage;
  }
  if (json) {
    nlohmann::json out = {{"format", "cuprobe-analyze/1"},
                          {"summary", report->summary},
                          {"findings", analysis::findings_json(report->findings)},
                          {"warnings", report->warnings}};
    // Text from the traces (command lines, paths) is whatever bytes the job had: bytes that
    // are not UTF-8 are written as U+FFFD rather than refusing the whole report.
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    analysis::print_report(*report, color < 0 ? isatty(1) != 0 : color == 1, stdout, per_rank);
  }
  for (const auto& f : report->findings) {
    if (f.severity >= fail_on) return kExitFindings;
  }
  return kExitOk;
}

int cmd_rules(const Args& args) {
  std::vector<std::string> dirs = {analysis::default_rules_dir()};
  OptionParser options("Usage: cuprobe rules [--rules DIR]\nLists the rules `cuprobe analyze` applies.\n");
  options.value("--rules", [&](const std::string& v) { dirs.push_back(v); });
  std::vector<std::string> operands;
  if (!options.parse(args, &operands)) return kExitOk;
  if (!operands.empty()) throw UsageError(fmt::format("unexpected argument '{}'", operands[0]));
  auto rules = analysis::load_rules(dirs);
  if (!rules) {
    fmt::print(stderr, "cuprobe rules: {}\n", rules.error().message);
    return kExitUsage;
  }
  for (const auto& [id, r] : *rules) fmt::print("{:<20} {:<8} {}\n", id, analysis::severity_name(r.severity), r.title);
  fmt::print("\n`cuprobe explain RULE` for one rule's rationale, thresholds and fix. Rules directory: {}\n", dirs[0]);
  return kExitOk;
}

int cmd_explain(const Args& args) {
  std::vector<std::string> dirs = {analysis::default_rules_dir()};
  OptionParser options("Usage: cuprobe explain RULE [--rules DIR]\nPrints a rule's rationale, thresholds and fix.\n");
  options.value("--rules", [&](const std::string& v) { dirs.push_back(v); });
  std::vector<std::string> operands;
  if (!options.parse(args, &operands)) return kExitOk;
  if (operands.size() > 1) throw UsageError(fmt::format("unexpected argument '{}'", operands[1]));
  std::string id = operands.empty() ? std::string() : operands[0];
  if (id.empty()) throw UsageError("which rule? usage: cuprobe explain RULE (see 'cuprobe rules')");
  auto rules = analysis::load_rules(dirs);
  if (!rules) {
    fmt::print(stderr, "cuprobe explain: {}\n", rules.error().message);
    return kExitUsage;
  }
  auto it = rules->find(id);
  if (it == rules->end()) {
    fmt::print(stderr, "cuprobe explain: no rule '{}' (see 'cuprobe rules')\n", id);
    return kExitUsage;
  }
  const analysis::RuleSpec& r = it->second;
  fmt::print("{} ({})\n{}\n\nWhy it matters\n  {}\n\nThresholds (change with --set {}.NAME=VALUE)\n", r.id,
             analysis::severity_name(r.severity), r.title, r.rationale, r.id);
  for (const auto& [name, p] : r.params) fmt::print("  {:<22} {:<10g} {}\n", name, p.value, p.description);
  fmt::print("\nWhat to do\n  {}\n", r.fix);
  // Findings that name a cause, pattern or kind carry that one's fix.
  for (const auto& [key, text] : r.fixes) fmt::print("  - {}: {}\n", key, text);
  if (!r.references.empty()) {
    fmt::print("\nReferences\n");
    for (const auto& ref : r.references) fmt::print("  {}\n", ref);
  }
  fmt::print("\nDefined in {}\n", r.file);
  return kExitOk;
}

}  // namespace cuprobe::cli
