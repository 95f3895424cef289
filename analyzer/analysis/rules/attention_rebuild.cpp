// attention-rebuild: cuDNN attention (SDPA) plans chosen again and again after warm-up because
// new shapes keep arriving (issue 33). PyTorch keeps one cuDNN attention graph per input shape and
// never times attention plans: each new sequence length is a heuristic selection whose graph and
// plan builds cost tens of milliseconds (about 60 ms per direction on an H100), which
// research-storm, about benchmark searches, does not see. Judged, like research-storm, by what
// the last half of the job paid: selections that stopped early were a one-off cost.
#include <set>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

bool is_attention(const reader::SearchRecord& s) {
  if (s.problem_info == nullptr || !s.problem_info->typed) return false;
  auto op = trace::ProblemOp(s.problem_info->desc.op);
  return op == trace::ProblemOp::kSdpaFwd || op == trace::ProblemOp::kSdpaBwd;
}

std::string range_text(const std::set<int64_t>& v) {
  if (v.size() <= 1) return v.empty() ? "" : std::to_string(*v.begin());
  return fmt::format("{}..{} ({} values)", *v.begin(), *v.rbegin(), v.size());
}

// What changed between the new shapes: the query's and the keys' sequence lengths, the batch,
// the head count (q, k: [batch, heads, sequence, head size]).
std::string varying_text(const std::vector<const reader::SearchRecord*>& late) {
  std::set<int64_t> sq, skv, batch, heads;
  for (const auto* s : late) {
    const trace::ProblemDesc& d = s->problem_info->desc;
    if (d.n_tensors < 2 || d.tensors[0].nbdims != 4 || d.tensors[1].nbdims != 4) continue;
    batch.insert(d.tensors[0].dims[0]);
    heads.insert(d.tensors[0].dims[1]);
    sq.insert(d.tensors[0].dims[2]);
    skv.insert(d.tensors[1].dims[2]);
  }
  std::vector<std::string> parts;
  if (sq.size() > 1 && sq == skv) {
    parts.push_back("sequence length " + range_text(sq));
  } else {
    if (sq.size() > 1) parts.push_back("query length " + range_text(sq));
    if (skv.size() > 1) parts.push_back("key length " + range_text(skv));
  }
  if (batch.size() > 1) parts.push_back("batch " + range_text(batch));
  if (heads.size() > 1) parts.push_back("heads " + range_text(heads));
  if (parts.empty()) return "the same sizes in other layouts or with other options";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// The middle of the job: in steps where the trace shows them (the second half of its steps began
// there), else in time. Plan builds stretch the first steps: on an H100 a job with four length
// buckets built its 8 attention plans in its first 4 of 40 steps, 0.85 s of its 1.2 s of training,
// so half of its time was mostly those first steps (docs/dev/validation.md, issue 33).
uint64_t middle_of(const ProcessFacts& p) {
  if (p.steps >= 4 && p.step_starts.size() == p.steps) return p.step_starts[p.steps / 2];
  return p.job_start_ns + (p.last_ns - p.job_start_ns) / 2;
}

void attention_rebuild(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_last_half = spec.param("min_last_half_selections");
  double min_share = spec.param("min_last_half_share");
  double error_share = spec.param("error_share");
  for (const ProcessFacts& p : all.processes) {
    if (p.last_ns <= p.job_start_ns) continue;
    uint64_t middle = middle_of(p);
    if (middle >= p.last_ns) continue;
    std::vector<const reader::SearchRecord*> late;
    std::set<uint64_t> late_problems;
    std::set<std::string> ops;
    uint64_t late_ns = 0, half_ns = 0;
    int half = 0;
    for (const auto& s : p.searches) {
      if (!s.backend() || s.benchmark() || s.was_steered() || !is_attention(s) || s.start_ns < p.warmup_end_ns) continue;
      uint64_t ns = s.end_ns > s.start_ns ? s.end_ns - s.start_ns : 0;
      late.push_back(&s);
      late_problems.insert(s.problem_hash);
      late_ns += ns;
      ops.insert(trace::ProblemOp(s.problem_info->desc.op) == trace::ProblemOp::kSdpaFwd ? "forward" : "backward");
      if (s.start_ns >= middle) {
        ++half;
        half_ns += ns;
      }
    }
    if (half < min_last_half) continue;
    double half_share = double(half_ns) / double(p.last_ns - middle);
    std::string op_text = ops.size() == 2 ? "forward and backward" : *ops.begin();
    nlohmann::json ev = {{"process", process_label(p)},
                         {"late_selections", late.size()},
                         {"late_shapes", late_problems.size()},
                         {"ops", op_text},
                         {"varying", varying_text(late)},
                         {"late_s", seconds(late_ns)},
                         {"last_half_selections", half},
                         {"last_half_s", seconds(half_ns)},
                         {"last_half_share", half_share},
                         {"per_selection_ms", double(late_ns) / 1e6 / double(late.size())}};
    Finding f = make_finding(spec, ev, seconds(late_ns));
    f.severity = half_share >= error_share ? Severity::kError
                 : half_share >= min_share ? Severity::kWarning
                                           : Severity::kInfo;
    f.pids.push_back(p.pid);
    for (size_t k = 0; k < late.size() && f.problems.size() < 5; ++k) {
      if (std::find(f.problems.begin(), f.problems.end(), late[k]->problem) == f.problems.end()) {
        f.problems.push_back(late[k]->problem);
      }
    }
    emit(std::move(f));
  }
}

const RegisterRule kRegister("attention-rebuild", attention_rebuild);

}  // namespace
}  // namespace cuprobe::analysis
