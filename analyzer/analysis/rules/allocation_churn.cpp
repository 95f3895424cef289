// allocation-churn: device memory given back and taken again in the steady state. PyTorch's
// caching allocator makes no cudaMalloc/cudaFree in a steady training loop; calls there are one
// of five things, told apart from the calls themselves (issue 28), and only the last two are
// churn:
//   - growth: allocations of sizes the process never gave back (new, larger shapes);
//   - release and retry: the allocator freeing its cache after a failed request to try again
//     (the out-of-memory story: the memory tracker leaves those frees out, counted apart);
//   - empty_cache(): the cache freed at once (a burst of frees, no failure before), the same
//     sizes taken again after it;
//   - expandable segments unmapping and mapping pages again (cuMemRelease/cuMemCreate);
//   - steady churn of the same sizes, one at a time (a library allocating on its own, or a cache
//     flushed under memory pressure).
// Churn that dies down is the allocator settling: info. The fix is conditioned on the allocator
// the job configured and the one the trace shows at work.
#include <algorithm>

#include "analysis/common.h"
#include "analysis/rules.h"

namespace cuprobe::analysis {
namespace {

constexpr const char* kKindEmptyCache = "empty_cache";
constexpr const char* kKindExpandable = "expandable segments";
constexpr const char* kKindSameSizes = "same sizes";
constexpr const char* kKindGrowth = "growth";

// What the steady-state calls are, by the classes above.
struct Classes {
  uint64_t allocs = 0, frees = 0, again = 0, physical = 0, burst_frees = 0;
};

// A free is part of a burst when at least `min_burst` frees follow each other with no
// allocation between them, all within `window_ns` of the first: the whole cache given back at
// once (torch.cuda.empty_cache(), or an emptyCache inside a library).
Classes classify(const std::vector<ChurnCall>& calls, uint64_t from, size_t min_burst, uint64_t window_ns) {
  Classes c;
  auto first = std::lower_bound(calls.begin(), calls.end(), from,
                                [](const ChurnCall& x, uint64_t t) { return x.ts_ns < t; });
  for (auto it = first; it != calls.end();) {
    if (it->alloc) {
      ++c.allocs;
      c.again += it->again;
      c.physical += it->physical;
      ++it;
      continue;
    }
    auto end = it;
    while (end != calls.end() && !end->alloc && end->ts_ns - it->ts_ns <= window_ns) ++end;
    size_t run = size_t(end - it);
    for (; it != end; ++it) {
      ++c.frees;
      c.physical += it->physical;
    }
    if (run >= min_burst) c.burst_frees += run;
  }
  return c;
}

// Whether the job runs with expandable segments, by its configuration or by what the trace shows
// (PyTorch's allocator creating physical handles rather than calling cudaMalloc).
bool expandable_in_use(const ProcessFacts& p) {
  return p.alloc_conf.find("expandable_segments:True") != std::string::npos ||
         p.alloc_conf.find("expandable_segments:true") != std::string::npos ||
         (p.physical_allocs > 0 && p.physical_allocs >= p.plain_allocs);
}

std::string allocator_text(const ProcessFacts& p) {
  std::string shown = p.pooled_allocs > p.plain_allocs + p.physical_allocs ? "stream-ordered pool (cudaMallocAsync)"
                      : p.physical_allocs > p.plain_allocs ? "expandable segments (cuMemCreate/cuMemMap)"
                                                           : "native caching allocator (cudaMalloc)";
  return p.alloc_conf.empty() ? shown : fmt::format("{}; PYTORCH_CUDA_ALLOC_CONF={}", shown, p.alloc_conf);
}

std::string fix_for(const RuleSpec& spec, const ProcessFacts& p, const std::string& kind, bool lasting) {
  if (!lasting) return spec.fix_for("died down");
  std::string fix = spec.fix_for(kind);
  // Expandable segments help a native allocator that flushes under fragmentation; a job that has
  // them already is not told to turn them on.
  if ((kind == kKindSameSizes || kind == kKindEmptyCache) && !expandable_in_use(p) && p.pooled_allocs == 0) {
    fix += " If the frees are there to fight fragmentation, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets "
           "the allocator grow segments in place instead.";
  }
  return fix;
}

void allocation_churn(const RuleSpec& spec, const AllFacts& all, const Emit& emit) {
  double min_calls = spec.param("min_calls");
  double min_share = spec.param("min_time_share");
  double min_frees = spec.param("min_frees");
  double min_half_share = spec.param("min_last_half_share");
  double min_again_share = spec.param("min_again_share");
  size_t min_burst = size_t(spec.param("burst_min_frees"));
  uint64_t burst_window = uint64_t(spec.param("burst_window_ms") * 1e6);
  for (const ProcessFacts& p : all.processes) {
    uint64_t calls = p.steady_allocs + p.steady_frees;
    double steady_s = p.last_ns > p.warmup_end_ns ? seconds(p.last_ns - p.warmup_end_ns) : 0;
    double share = steady_s > 0 ? seconds(p.steady_alloc_ns) / steady_s : 0;
    // Allocations alone are the cache growing; churn gives memory back and takes it again.
    if (double(calls) < min_calls || share < min_share || double(p.steady_frees) < min_frees) continue;
    const Classes c = classify(p.churn_calls, p.warmup_end_ns, min_burst, burst_window);
    // Churn takes the same memory back: most steady-state allocations are of sizes given back before.
    const bool churn = c.allocs > 0 && double(c.again) >= min_again_share * double(c.allocs);
    const std::string kind = !churn                                   ? kKindGrowth
                             : c.physical * 2 > c.allocs + c.frees    ? kKindExpandable
                             : c.burst_frees * 2 > c.frees            ? kKindEmptyCache
                                                                      : kKindSameSizes;
    // Does it last? The calls after warm-up that fall in the job's last half.
    uint64_t half = std::max(last_half_start(p), p.warmup_end_ns);
    const auto& ts = p.churn_call_ts;
    uint64_t after_warm = uint64_t(ts.end() - std::lower_bound(ts.begin(), ts.end(), p.warmup_end_ns));
    uint64_t last_half = uint64_t(ts.end() - std::lower_bound(ts.begin(), ts.end(), half));
    double half_share = after_warm ? double(last_half) / double(after_warm) : 0;
    bool lasting = half_share >= min_half_share;
    uint64_t last_call = ts.empty() ? 0 : ts.back();
    double last_s = last_call > p.job_start_ns ? seconds(last_call - p.job_start_ns) : 0;
    std::string what;
    if (kind == kKindGrowth) {
      what = fmt::format("not churn: {} of the {} allocations were of sizes never given back before (the allocator "
                         "growing with new, larger shapes){}",
                         c.allocs - c.again, c.allocs,
                         p.retry_frees ? fmt::format("; {} other frees were the allocator releasing its cache to "
                                                     "retry failed requests (see oom-postmortem)",
                                                     p.retry_frees)
                                       : "");
    } else if (kind == kKindEmptyCache) {
      what = fmt::format("the cache emptied at once: {} of {} frees came in bursts with no failed request before "
                         "(torch.cuda.empty_cache() or a library's emptyCache), and {} of {} allocations took the "
                         "same sizes back",
                         c.burst_frees, c.frees, c.again, c.allocs);
    } else if (kind == kKindExpandable) {
      what = fmt::format("expandable segments giving pages back and mapping them again: {} of the calls are physical "
                         "handles (cuMemCreate/cuMemRelease), {} of {} allocations of sizes given back before",
                         c.physical, c.again, c.allocs);
    } else {
      what = fmt::format("the same sizes freed and taken again one at a time: {} of {} allocations of sizes given "
                         "back before",
                         c.again, c.allocs);
    }
    std::string when = lasting ? fmt::format("they go on through the job ({} in its last half)", last_half)
                               : fmt::format("they died down: {} in the job's last half, the last {:.1f} s into the "
                                             "job (the allocator settling: new shapes, a first evaluation)",
                                             last_half, last_s);
    nlohmann::json ev = {{"process", process_label(p)},
                         {"calls", calls},
                         {"allocations", p.steady_allocs},
                         {"frees", p.steady_frees},
                         {"bytes_allocated", p.steady_alloc_bytes},
                         {"rate_per_s", steady_s > 0 ? double(calls) / steady_s : 0},
                         {"time_s", seconds(p.steady_alloc_ns)},
                         {"share", share},
                         {"kind", kind},
                         {"what", what},
                         {"same_size_allocations", c.again},
                         {"burst_frees", c.burst_frees},
                         {"physical_calls", c.physical},
                         {"retry_frees", p.retry_frees},
                         {"allocator", allocator_text(p)},
                         {"last_half_calls", last_half},
                         {"last_half_share", half_share},
                         {"lasting", lasting},
                         {"last_call_s", last_s},
                         {"when", when}};
    const bool finding = kind != kKindGrowth && lasting;
    Finding f = make_finding(spec, ev, finding ? seconds(p.steady_alloc_ns) : 0);
    if (!finding) f.severity = Severity::kInfo;
    f.fix = kind == kKindGrowth ? spec.fix_for(kKindGrowth) : fix_for(spec, p, kind, lasting);
    f.pids.push_back(p.pid);
    f.call_sites = top_sites(all, p, p.steady_alloc_stacks, "steady-state allocations from");
    emit(std::move(f));
  }
}

const RegisterRule kRegister("allocation-churn", allocation_churn);

}  // namespace
}  // namespace cuprobe::analysis
