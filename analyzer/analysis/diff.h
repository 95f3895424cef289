// `cuprobe diff A B` (issue 31): why run B is slower, bigger or different than run A, at the level
// where cuDNN and the allocator make their choices. Both sides are read as analyze reads a job
// (run directories, traces, facts files); processes are matched rank to rank (else in the order
// reports list them); each side's steps, searches, plans, synchronizations, allocations, memory,
// failures and configuration are compared, and the difference in step time and peak memory is
// attributed to causes ranked by their contribution. docs/commands/diff.md has the output.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/result.h"

namespace cuprobe::analysis {

struct DiffOptions {
  std::vector<std::string> a, b;  // each side's paths
  int threads = 0;                // traces read in parallel (0: one per core)
};

// The comparison as JSON (format "cuprobe-diff/1", docs/diff-json.md); an error when a side
// has no process that did CUDA work.
Result<nlohmann::json> diff_runs(const DiffOptions& options);

// The comparison as text: the sides, step time and peak memory, the causes largest first, what
// is left unattributed.
void print_diff(const nlohmann::json& diff, FILE* out);

// One job's processes against its typical one (the process whose step is the job's median), for
// the slow rank of a DDP job: each process that differs, by how much its step is slower, with the
// causes (format "cuprobe-diff-ranks/1"; options.a are the job's paths).
Result<nlohmann::json> diff_ranks(const DiffOptions& options);
void print_diff_ranks(const nlohmann::json& diff, FILE* out);

// Two plan files (cuprobe plans export, format cuprobe-plans/1), already parsed: per problem, GPU
// and cuDNN version, the plan each holds and its measured time (format "cuprobe-diff-plans/1");
// an error naming the side that is not a plan file.
Result<nlohmann::json> diff_plan_files(const nlohmann::json& a, const nlohmann::json& b);
void print_diff_plans(const nlohmann::json& diff, FILE* out);

}  // namespace cuprobe::analysis
