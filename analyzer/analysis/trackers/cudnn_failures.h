// cuDNN calls that failed, by (API, problem, status, whether routine): a plan or candidate
// rejected while a search went on to a winner is routine. Failures the fault plan injected are
// the fault summary's (faults.h), not these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/trackers/searches.h"
#include "analysis/trackers/tracker.h"

namespace cuprobe::analysis {

class CudnnFailureTracker {
 public:
  // `searches`: which failures fell inside a search that found a winner (known once it finished).
  CudnnFailureTracker(const reader::Trace& trace, const SearchesTracker& searches);
  void on_event(const reader::Event& e, const ApiView& v) {
    if (v.cudnn && e.ret != 0 && !e.injected()) on_failure(e, v);
  }
  // cudnn_failures.
  void finish(ProcessFacts& f);

 private:
  struct Failure {
    uint16_t api;
    uint64_t problem_hash;
    const std::string* problem;  // problem_text_of: valid while the trace is
    const reader::Problem* problem_info;
    int32_t status;
    uint64_t ts;
    uint32_t tid;
    uint32_t align;
    reader::StackId stack;
  };

  void on_failure(const reader::Event& e, const ApiView& v);

  const reader::Trace& trace_;
  const SearchesTracker& searches_;
  std::vector<Failure> failures_;
};

}  // namespace cuprobe::analysis
