// allocation-churn: cudaMalloc/cudaFree calls after warm-up. PyTorch's caching allocator
// makes none in a steady training loop; calls there mean its cache is being emptied
// (torch.cuda.empty_cache() in the loop, or memory pressure making it flush and retry).
#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

void allocation_churn(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_calls = spec.param("min_calls");
  double min_share = spec.param("min_time_share");
  double min_frees = spec.param("min_frees");
  for (const ProcessFacts& p : all.processes) {
    uint64_t calls = p.steady_allocs + p.steady_frees;
    double steady_s = p.last_ns > p.warmup_end_ns ? seconds(p.last_ns - p.warmup_end_ns) : 0;
    double share = steady_s > 0 ? seconds(p.steady_alloc_ns) / steady_s : 0;
    // Allocations alone are the cache growing; churn gives memory back and takes it again.
    if (double(calls) < min_calls || share < min_share || double(p.steady_frees) < min_frees) continue;
    nlohmann::json ev = {{"process", process_label(p)},
                         {"calls", calls},
                         {"allocations", p.steady_allocs},
                         {"frees", p.steady_frees},
                         {"bytes_allocated", p.steady_alloc_bytes},
                         {"rate_per_s", steady_s > 0 ? double(calls) / steady_s : 0},
                         {"time_s", seconds(p.steady_alloc_ns)},
                         {"share", share}};
    Finding f = make_finding(spec, ev, seconds(p.steady_alloc_ns));
    f.pids.push_back(p.pid);
    f.call_sites = top_sites(all, p, p.steady_alloc_stacks, "steady-state allocations from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("allocation-churn", allocation_churn);

}  // namespace
}  // namespace cuprobe::analysis
