// unsupported-config: cuDNN failures grouped by problem, routine rejections during plan
// building kept apart from failures the application saw, with known causes called out.
#include <map>

#include "analysis/common.h"
#include "analysis/rules.h"
#include "trace/problem_view.h"
#include "cudnn_status.h"

namespace cuprobe::analysis {
namespace {

// cuDNN attention (q[batch, heads, sequence, head dim]) refused. PyTorch picks its SDPA backend
// before asking cuDNN (its own checks; recent PyTorch puts cuDNN first on sm90/sm100); once cuDNN is
// chosen, a graph without a plan raises "cuDNN Frontend error" (MHA.cpp's AT_CUDNN_FRONTEND_CHECK)
// rather than trying flash or memory-efficient attention (seen with PyTorch 2.11 on an H100:
// docs/dev/validation.md, issue 33).
std::string attention_cause(const reader::ProblemShape& s) {
  std::string why = "cuDNN has no attention plan for this configuration";
  if (s.dims.size() == 4 && s.dims[3] % 8 != 0) {
    why = fmt::format("head dim {}, not a multiple of 8 (cuDNN's attention needs multiples of 8)", s.dims[3]);
  }
  return why +
         "; PyTorch does not fall back to another attention backend at this point: the call raises 'cuDNN "
         "Frontend error'";
}

// Where the rule's fix text turns to attention (rules/unsupported-config.json).
constexpr std::string_view kAttentionFix = "Attention (sdpa_fwd, sdpa_bwd):";

// Known reasons cuDNN rejects a problem, read from its signature and alignment.
std::string known_causes(const CudnnFailure& f, double max_elements, double min_alignment) {
  std::string out;
  reader::ProblemShape s = reader::problem_shape(f.problem_info);
  if (s.op.rfind("sdpa_", 0) == 0) return attention_cause(s);
  bool low_precision = s.dtype == "f16" || s.dtype == "bf16" || s.dtype.rfind("fp8", 0) == 0 || s.dtype == "i8";
  // The second dimension is the channel count of convolutions, norms and pooling (NCHW order);
  // of a matmul it is the rows, of an RNN the batch: no channel rule for them.
  bool channels = !(s.op == "matmul" || s.op == "blaslt_matmul" || s.op.rfind("rnn", 0) == 0 || s.op == "ctc_loss");
  if (channels && s.dims.size() >= 2 && low_precision && s.dims[1] % 8 != 0) {
    out += fmt::format("{} channels, not a multiple of 8: tensor-core kernels need multiples of 8 in {}; ", s.dims[1],
                       s.dtype);
  }
  double elements = 1;
  for (int64_t d : s.dims) elements *= double(d);
  if (!s.dims.empty() && elements >= max_elements) {
    out += fmt::format("{:.3g} elements in one tensor (beyond 2^31 many kernels refuse); ", elements);
  }
  if (f.align && double(f.align) < min_alignment) out += fmt::format("pointers aligned to only {} bytes; ", f.align);
  if (!out.empty()) out.resize(out.size() - 2);
  return out;
}

void unsupported_config(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double max_elements = spec.param("max_elements");
  double min_alignment = spec.param("min_alignment");
  for (const ProcessFacts& p : all.processes) {
    uint64_t routine = 0;
    nlohmann::json items = nlohmann::json::array();
    std::vector<std::string> problems;
    uint64_t visible = 0;
    std::string first_cause;
    std::vector<reader::StackId> stacks;
    bool all_attention = true;  // then the fix is the attention part of the rule's fixes alone
    for (const auto& f : p.cudnn_failures) {
      if (f.routine) {
        routine += f.count;
        continue;
      }
      visible += f.count;
      all_attention = all_attention && reader::problem_shape(f.problem_info).op.rfind("sdpa_", 0) == 0;
      if (f.stack) stacks.push_back(f.stack);
      std::string cause = known_causes(f, max_elements, min_alignment);
      if (first_cause.empty()) first_cause = cause;
      items.push_back({{"api", f.api},
                       {"status", f.status},
                       {"status_name", cudnn_status_name(f.status) ? cudnn_status_name(f.status) : ""},
                       {"problem", f.problem},
                       {"count", f.count},
                       {"known_cause", cause}});
      if (problems.size() < 5) {
        problems.push_back(fmt::format("{} {} {}x: {}{}", f.api, cudnn_status_text(f.status), f.count,
                                       f.problem.empty() ? "(no problem known)" : f.problem,
                                       cause.empty() ? "" : " -- " + cause));
      }
    }
    // Searches in which every candidate failed end in PyTorch's "unable to find an engine".
    int hopeless = 0;
    for (const auto& s : p.searches) {
      if (s.winner >= 0 || s.candidates.empty()) continue;
      // A search that failed because cuprobe failed its candidates on purpose is the fault summary's.
      if (std::any_of(s.candidates.begin(), s.candidates.end(), [](const auto& c) { return c.injected; })) continue;
      bool all_failed = true;
      for (const auto& c : s.candidates) all_failed = all_failed && (c.build_status != 0 || (c.exec_status > 0));
      hopeless += all_failed ? 1 : 0;
      if (all_failed && s.stack) stacks.push_back(s.stack);
    }
    if (visible == 0 && hopeless == 0) continue;
    nlohmann::json ev = {{"process", process_label(p)},
                         {"failures", visible},
                         {"routine_rejections", routine},
                         {"searches_without_engine", hopeless},
                         {"known_cause", first_cause.empty() ? "none recognised" : first_cause},
                         {"items", items}};
    Finding f = make_finding(spec, ev, 0);
    if (size_t at = f.fix.find(kAttentionFix); all_attention && visible > 0 && at != std::string::npos) {
      f.fix = f.fix.substr(at);
    }
    f.run_event = RunEvent::kFailure;
    f.pids.push_back(p.pid);
    f.problems = problems;
    f.call_sites = top_sites(all, p, stacks, "failures from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("unsupported-config", unsupported_config);

}  // namespace
}  // namespace cuprobe::analysis
