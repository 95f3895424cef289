// allocation-churn: cudaMalloc/cudaFree calls after warm-up that go on through the job. PyTorch's
// caching allocator makes none in a steady training loop; calls there mean its cache is being
// emptied (torch.cuda.empty_cache() in the loop, or memory pressure making it flush and retry).
// Calls that die down are the allocator settling (new shapes searched, the first evaluation at
// another batch size): reported at info, saying so.
#include <algorithm>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void allocation_churn(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_calls = spec.param("min_calls");
  double min_share = spec.param("min_time_share");
  double min_frees = spec.param("min_frees");
  double min_half_share = spec.param("min_last_half_share");
  for (const ProcessFacts& p : all.processes) {
    uint64_t calls = p.steady_allocs + p.steady_frees;
    double steady_s = p.last_ns > p.warmup_end_ns ? seconds(p.last_ns - p.warmup_end_ns) : 0;
    double share = steady_s > 0 ? seconds(p.steady_alloc_ns) / steady_s : 0;
    // Allocations alone are the cache growing; churn gives memory back and takes it again.
    if (double(calls) < min_calls || share < min_share || double(p.steady_frees) < min_frees) continue;
    // Does it last? The calls after warm-up that fall in the job's last half.
    uint64_t half = std::max(last_half_start(p), p.warmup_end_ns);
    const auto& ts = p.churn_call_ts;
    uint64_t after_warm = uint64_t(ts.end() - std::lower_bound(ts.begin(), ts.end(), p.warmup_end_ns));
    uint64_t last_half = uint64_t(ts.end() - std::lower_bound(ts.begin(), ts.end(), half));
    double half_share = after_warm ? double(last_half) / double(after_warm) : 0;
    bool lasting = half_share >= min_half_share;
    uint64_t last_call = ts.empty() ? 0 : ts.back();
    nlohmann::json ev = {{"process", process_label(p)},
                         {"calls", calls},
                         {"allocations", p.steady_allocs},
                         {"frees", p.steady_frees},
                         {"bytes_allocated", p.steady_alloc_bytes},
                         {"rate_per_s", steady_s > 0 ? double(calls) / steady_s : 0},
                         {"time_s", seconds(p.steady_alloc_ns)},
                         {"share", share},
                         {"last_half_calls", last_half},
                         {"last_half_share", half_share},
                         {"lasting", lasting},
                         {"last_call_s", last_call > p.job_start_ns ? seconds(last_call - p.job_start_ns) : 0},
                         {"when", lasting ? fmt::format("they go on through the job ({} in its last half)", last_half)
                                          : fmt::format("they died down: {} in the job's last half, the last {:.1f} s "
                                                        "into the job (the allocator settling: new shapes, a first "
                                                        "evaluation)",
                                                        last_half, last_call > p.job_start_ns
                                                                       ? seconds(last_call - p.job_start_ns) : 0.0)}};
    Finding f = make_finding(spec, ev, lasting ? seconds(p.steady_alloc_ns) : 0);
    if (!lasting) {
      f.severity = Severity::kInfo;
      f.fix = spec.fix_for("died down");  // the general fix (remove empty_cache...) is for churn that lasts
    }
    f.pids.push_back(p.pid);
    f.call_sites = top_sites(all, p, p.steady_alloc_stacks, "steady-state allocations from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("allocation-churn", allocation_churn);

}  // namespace
}  // namespace cuprobe::analysis
