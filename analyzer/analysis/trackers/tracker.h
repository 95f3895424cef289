// One concern of the per-process pass (facts.h): a tracker sees every call in time order, then
// writes what it established into its own fields of the process's facts.
//
// A tracker that needs another's state is given that tracker at construction (a reference, named
// in its constructor) and must come after it in the pass: every call reaches the other first, so
// its state is up to date for the call, and it finishes first. Nothing is shared otherwise.
//
// The pass is the analyzer's only per-event work: trackers are called directly (no virtual
// dispatch), and keep the test of whether a call concerns them inline in their header, so that
// a call no tracker wants costs a few instructions each.
#pragma once

#include <concepts>

#include "analysis/facts.h"
#include "analysis/trackers/api_view.h"
#include "trace/reader.h"

namespace cuprobe::analysis {

template <typename T>
concept Tracker = requires(T& t, const reader::Event& e, const ApiView& v, ProcessFacts& f) {
  t.on_event(e, v);  // one call, in timestamp order; `v` is its API's view
  t.finish(f);       // after the last call
};

// One pass over the trace's calls, each reaching the trackers in the order given, then each
// tracker's finish in that order.
template <Tracker... T>
void run_pass(const reader::Trace& trace, const ApiViews& views, ProcessFacts& f, T&... trackers) {
  trace.for_each_event([&](const reader::Event& e) {
    const ApiView& v = views[e.api];
    (trackers.on_event(e, v), ...);
  });
  (trackers.finish(f), ...);
}

}  // namespace cuprobe::analysis
