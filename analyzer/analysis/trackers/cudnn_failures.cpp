// cuDNN failures; see cudnn_failures.h.
#include "analysis/trackers/cudnn_failures.h"

#include <map>
#include <tuple>

#include "analysis/problem_access.h"

namespace cuprobe::analysis {

CudnnFailureTracker::CudnnFailureTracker(const reader::Trace& trace, const SearchesTracker& searches)
    : trace_(trace), searches_(searches) {}

void CudnnFailureTracker::on_failure(const reader::Event& e, const ApiView& v) {
  failures_.push_back(Failure{e.api, problem_hash_of(trace_, e, v), &problem_text_of(trace_, e, v),
                              problem_of(trace_, e, v), e.ret, e.ts_ns, e.tid, uint32_t(field(e, v.align)), e.stack});
}

void CudnnFailureTracker::finish(ProcessFacts& f) {
  // Failures during a search that went on to a winner were routine plan rejections.
  std::map<std::tuple<std::string, uint64_t, int32_t, bool>, CudnnFailure> agg;
  for (const Failure& x : failures_) {
    bool routine = false;
    for (const auto& s : searches_.searches()) {
      if (s.tid == x.tid && s.complete && x.ts >= s.start_ns && x.ts <= s.end_ns) routine = true;
    }
    const std::string& api = trace_.api_name(x.api);
    CudnnFailure& c = agg[{api, x.problem_hash, x.status, routine}];
    if (c.count == 0) {
      c.api = api;
      c.problem = *x.problem;
      c.problem_info = x.problem_info;
      c.problem_hash = x.problem_hash;
      c.status = x.status;
      c.routine = routine;
      c.first_ns = x.ts;
      c.align = x.align;
    }
    if (c.stack == 0) c.stack = x.stack;
    ++c.count;
    c.last_ns = x.ts;
    if (x.align && (c.align == 0 || x.align < c.align)) c.align = x.align;
  }
  for (auto& [k, v] : agg) f.cudnn_failures.push_back(std::move(v));
}

}  // namespace cuprobe::analysis
