// Span and warm-up; see warmup.h.
#include "analysis/trackers/warmup.h"

#include "analysis/problem_access.h"
#include "trace/problem_view.h"

namespace cuprobe::analysis {

WarmupTracker::WarmupTracker(const reader::Trace& trace, SearchesTracker& searches, const FactOptions& options)
    : trace_(trace), searches_(searches), warmup_fraction_(options.warmup_fraction), span_end_(trace.last_event_ns()) {
  searches.on_search([this](const reader::SearchRecord& r) { on_selection(r); });
}

uint64_t WarmupTracker::layer(uint64_t hash, const reader::Problem* problem) {
  auto known = layers_.find(hash);
  if (known == layers_.end()) known = layers_.emplace(hash, problem ? reader::layer_key(*problem) : 1).first;
  return known->second;
}

// A backend selection without timing (cudnn.benchmark off: the heuristics' first plan that
// works) ran its plan inside the selection, where on_run did not count it: without this, the
// first layer of a benchmark-off job would never be seen as such, and a layer that recurs
// within a step (ResNet's repeated blocks run one cached plan several times a step) would mark
// the steps instead (seen on an H100: 0.50 ms "steps" for a 19 ms ResNet-50 step).
void WarmupTracker::on_selection(const reader::SearchRecord& r) {
  if (r.benchmark() || !r.backend() || r.winner < 0 || r.problem_hash == 0) return;
  const auto& w = r.candidates[size_t(r.winner)];
  if (w.executions == 0 || w.exec_status != 0) return;
  steps_.on_layer(layer(r.problem_hash, r.problem_info), r.start_ns);
}

void WarmupTracker::on_job_start(const reader::Event& e) {
  job_start_ = e.ts_ns;
  if (span_end_ > job_start_) {
    fraction_end_ = job_start_ + uint64_t(double(span_end_ - job_start_) * warmup_fraction_);
    fraction_known_ = true;
  }
}

// A problem ran with its chosen plan or algorithm (not a candidate of its selection).
void WarmupTracker::on_run(const reader::Event& e, const ApiView& v) {
  uint64_t hash = problem_hash_of(trace_, e, v);
  if (hash == 0 || (v.backend_execute && searches_.in_episode(e.tid, hash))) return;
  auto known = layers_.find(hash);
  if (known == layers_.end()) known = layers_.emplace(hash, layer_of(trace_, e, v)).first;
  // The winner's first run ends its search (SearchesTracker saw this call first): a step that
  // begins with a search begins where the search did.
  uint64_t start = e.ts_ns;
  const auto& searches = searches_.searches();
  if (!searches.empty() && searches.back().problem_hash == hash && searches.back().end_ns == e.ts_ns &&
      searches.back().tid == e.tid) {
    start = std::min(start, searches.back().start_ns);
  }
  steps_.on_layer(known->second, start);
}

void WarmupTracker::finish(ProcessFacts& f) {
  f.first_ns = first_ == UINT64_MAX ? 0 : first_;
  f.last_ns = last_;
  // A process that did no work: its job is its span.
  f.did_work = job_start_ != UINT64_MAX;
  f.job_start_ns = f.did_work ? job_start_ : f.first_ns;
  uint64_t fraction_end = fraction_end_;
  if (!fraction_known_ && last_ > f.job_start_ns) {
    fraction_end = f.job_start_ns + uint64_t(double(last_ - f.job_start_ns) * warmup_fraction_);
  }
  f.steps = steps_.count();
  f.second_pass_ns = steps_.second_pass_ns();
  f.step_starts = steps_.take_starts();
  // Warm-up ends where the job starts repeating itself, when that is seen; else after the
  // first part of the run.
  f.warmup_end_ns = f.second_pass_ns ? f.second_pass_ns : fraction_end;
}

}  // namespace cuprobe::analysis
