// Span and warm-up; see warmup.h.
#include "analysis/trackers/warmup.h"

#include "analysis/problem_access.h"

namespace cuprobe::analysis {

WarmupTracker::WarmupTracker(const reader::Trace& trace, const SearchesTracker& searches, const FactOptions& options)
    : trace_(trace), searches_(searches), warmup_fraction_(options.warmup_fraction), span_end_(trace.last_event_ns()) {}

void WarmupTracker::on_first(const reader::Event& e) {
  first_ = e.ts_ns;
  if (span_end_ > first_) {
    fraction_end_ = first_ + uint64_t(double(span_end_ - first_) * warmup_fraction_);
    fraction_known_ = true;
  }
}

// A problem ran with its chosen plan or algorithm (not a candidate of its selection).
void WarmupTracker::on_run(const reader::Event& e, const ApiView& v) {
  uint64_t hash = problem_hash_of(trace_, e, v);
  if (hash == 0 || (v.backend_execute && searches_.in_episode(e.tid, hash))) return;
  auto known = layers_.find(hash);
  if (known == layers_.end()) known = layers_.emplace(hash, layer_of(trace_, e, v)).first;
  steps_.on_layer(known->second, e.ts_ns);
}

void WarmupTracker::finish(ProcessFacts& f) {
  f.first_ns = first_ == UINT64_MAX ? 0 : first_;
  f.last_ns = last_;
  uint64_t fraction_end = fraction_end_;
  if (!fraction_known_ && last_ > f.first_ns) {
    fraction_end = f.first_ns + uint64_t(double(last_ - f.first_ns) * warmup_fraction_);
  }
  f.second_pass_ns = steps_.second_pass_ns();
  // Warm-up ends where the job starts repeating itself, when that is seen; else after the
  // first part of the run.
  f.warmup_end_ns = f.second_pass_ns ? f.second_pass_ns : fraction_end;
}

}  // namespace cuprobe::analysis
