// Searches; see searches.h.
#include "analysis/trackers/searches.h"

namespace cuprobe::analysis {

SearchesTracker::SearchesTracker(const reader::Trace& trace)
    : tracker_(trace, [this](const reader::SearchRecord& r) {
        searches_.push_back(r);
        for (const Listener& l : listeners_) l(r);
      }) {}

void SearchesTracker::finish(ProcessFacts& f) {
  tracker_.finish();
  f.searches = searches_;
}

}  // namespace cuprobe::analysis
