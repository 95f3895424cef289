// Plan and algorithm selections (reader::SearchTracker): the process's searches, and for other
// trackers, whether a thread is choosing a plan right now.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/trackers/tracker.h"
#include "trace/searches.h"

namespace cuprobe::analysis {

class SearchesTracker {
 public:
  using Listener = std::function<void(const reader::SearchRecord&)>;

  explicit SearchesTracker(const reader::Trace& trace);
  SearchesTracker(const SearchesTracker&) = delete;  // the reader's tracker calls back into this one
  SearchesTracker& operator=(const SearchesTracker&) = delete;
  void on_event(const reader::Event& e, const ApiView&) { tracker_.on_event(e); }
  // Closes the searches still open (their listeners are told), then writes searches.
  void finish(ProcessFacts& f);

  // Calls `l` with each search as it closes, in order (also those closed by finish).
  void on_search(Listener l) { listeners_.push_back(std::move(l)); }
  // The problem the thread is choosing a plan for at the current call, or nullptr.
  const std::string* selecting(uint32_t tid) const { return tracker_.selecting(tid); }
  // Whether the thread's open selection is for this problem (its executions are candidates).
  bool in_episode(uint32_t tid, uint64_t problem_hash) const { return tracker_.in_episode(tid, problem_hash); }
  // The searches closed so far; all of them once finished.
  const std::vector<reader::SearchRecord>& searches() const { return searches_; }

 private:
  std::vector<reader::SearchRecord> searches_;
  std::vector<Listener> listeners_;
  reader::SearchTracker tracker_;  // last: its sink uses the members above
};

}  // namespace cuprobe::analysis
