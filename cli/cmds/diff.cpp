// `cuprobe diff A B` (issue 31): see analyzer/analysis/diff.h.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "analysis/diff.h"
#include "cli.h"
#include "cmds/output_file.h"
#include "cmds/plans.h"
#include "plan_pin_text.h"

namespace cuprobe::cli {

namespace {

constexpr const char* kHelp = R"HELP(Usage: cuprobe diff [options] A B
       cuprobe diff --ranks [options] RUN
       cuprobe diff [options] PLANS_A.json PLANS_B.json    (either may be a run)

Why run B is slower, bigger or different than run A. A and B are each a run directory, a trace,
a facts file (cuprobe facts) or `cuprobe dump` output; several paths make one side when joined
with commas (A1,A2). Processes are matched rank to rank (by program and device when ranks are
not known). For each side: the step time (the median time from one training step's
start to the next, after the first), cuDNN searches, the plan each problem ran with and what it
measured, synchronizations, steady-state allocations, peak memory by owner, failures and the
configuration (cudnn.benchmark, deterministic mode, TF32, versions, GPU, plan file, search
budget, memory cap, fault plan, allocator settings, recorded environment variables).

The difference is explained by causes: what differs between the runs first (configuration, then
the problems they ran, then environment variables), each with the measured effects it explains
per step; then effects nothing explains, largest first, when above the noise (a tenth of A's
step, at least 0.5 ms); then failures. What the effects do not add up to is unattributed, with
its size.

Two plan files (cuprobe plans export) are compared plan by plan: per problem, GPU and cuDNN
version, the plan each holds and the time it measured, and the problems only one has. A plan
file against a run compares the file with the run's plans as cuprobe plans export gives them.

With --ranks, one job's processes are compared with its typical one (the process whose step
is the job's median): each process that differs, slowest first, with its causes (the slow rank
of a DDP job).

Options:
  --ranks              each process of one run against the job's typical process
  --json               machine-readable (format cuprobe-diff/1, or cuprobe-diff-ranks/1 with
                       --ranks; docs/diff-json.md)
  --threads N          traces read in parallel (default: one per core)
  -h, --help           this text

Exit status: 0 compared, 2 usage error or a side with no process that did CUDA work.
)HELP";

}  // namespace

int cmd_diff(const Args& args) {
  analysis::DiffOptions o;
  bool json = false;
  OptionParser options(kHelp);
  options.flag("--json", [&] { json = true; });
  bool ranks = false;
  options.flag("--ranks", [&] { ranks = true; });
  options.value("--threads", [&](const std::string& v) { o.threads = int(parse_count("--threads", v)); });
  std::vector<std::string> paths;
  if (!options.parse(args, &paths)) return kExitOk;
  // The comparison's JSON, or its text; an unreadable side is exit status 2.
  auto emit = [&](const Result<nlohmann::json>& d, void (*print)(const nlohmann::json&, FILE*)) {
    if (!d) {
      fmt::print(stderr, "cuprobe diff: {}\n", d.error().message);
      return kExitUsage;
    }
    if (json) {
      fmt::print("{}\n", d.value().dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      print(d.value(), stdout);
    }
    return kExitOk;
  };
  if (ranks) {
    if (paths.size() != 1) throw UsageError("--ranks takes one run; usage: cuprobe diff --ranks RUN");
    o.a = split_commas(paths[0]);
    return emit(analysis::diff_ranks(o), analysis::print_diff_ranks);
  }
  if (paths.size() != 2) {
    throw UsageError(
        fmt::format("{} given; usage: cuprobe diff A B (two runs; several paths of one run joined by commas)",
                    paths.empty() ? std::string("no run") : fmt::format("{} runs", paths.size())));
  }
  // Plan files (cuprobe plans export) on both sides: their plans compared; one side only: say how.
  auto plan_file = [](const std::string& path) -> std::optional<nlohmann::json> {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
    std::ifstream in(path);
    char first = 0;
    in >> first;
    if (first != '{') return std::nullopt;
    std::string text = read_input_file("plan file", path, pins::kMaxPlanFileBytes);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("format", "").rfind("cuprobe-plans/", 0) != 0)
      return std::nullopt;
    return j;
  };
  auto pa = plan_file(paths[0]), pb = plan_file(paths[1]);
  if (pa && pb) return emit(analysis::diff_plan_files(*pa, *pb), analysis::print_diff_plans);
  if (pa || pb) {
    // A plan file against a run: the run's plans as `cuprobe plans export` gives them.
    const std::string& run = pa ? paths[1] : paths[0];
    std::vector<std::string> warnings;
    auto exported = exported_plans(split_commas(run), &warnings);
    for (const auto& w : warnings) fmt::print(stderr, "cuprobe diff: note: {}\n", w);
    if (!exported) {
      fmt::print(stderr, "cuprobe diff: {} is a plan file; {}: {}\n", pa ? paths[0] : paths[1], run,
                 exported.error().message);
      return kExitUsage;
    }
    auto d = pa ? analysis::diff_plan_files(*pa, *exported) : analysis::diff_plan_files(*exported, *pb);
    if (d) (*d)[pa ? "b_exported_from" : "a_exported_from"] = run;
    return emit(d, analysis::print_diff_plans);
  }
  o.a = split_commas(paths[0]);
  o.b = split_commas(paths[1]);
  return emit(analysis::diff_runs(o), analysis::print_diff);
}

}  // namespace cuprobe::cli
