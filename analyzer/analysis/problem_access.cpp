// A call's cuDNN problem; see problem_access.h.
#include "analysis/problem_access.h"

#include "analysis/facts.h"
#include "analysis/trackers/api_view.h"
#include "trace/problem_view.h"

namespace cuprobe::analysis {

ProblemFields problem_fields(const reader::Api& api) {
  ProblemFields p;
  p.id = api.field_index("problem");
  return p;
}

bool names_problem(const ApiView& v) { return v.problem.id >= 0; }

const reader::Problem* problem_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v) {
  return v.problem.id >= 0 ? trace.problem(reader::ProblemId(field(e, v.problem.id))) : nullptr;
}

uint64_t problem_hash_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v) {
  const reader::Problem* p = problem_of(trace, e, v);
  return p ? p->hash : 0;
}

const std::string& problem_text_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v) {
  static const std::string kNone;
  const reader::Problem* p = problem_of(trace, e, v);
  return p ? p->text : kNone;
}

uint64_t layer_of(const reader::Trace& trace, const reader::Event& e, const ApiView& v) {
  const reader::Problem* p = problem_of(trace, e, v);
  return p ? reader::layer_key(*p) : 1;
}

}  // namespace cuprobe::analysis
