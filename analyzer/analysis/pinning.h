// What plan pinning (docs/plan-pinning.md) did in one process: its plan selections that ended on
// the pinned plan after one candidate, the searches that saved (as the plan file measured them),
// and where the shim stepped aside and why. Read from the trace's PinRecords (reader::PinEvent),
// the kPinnedPlans property and the process's rebuilt searches.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/facts.h"

namespace cuprobe::analysis {

struct PinSummary {
  bool active = false;         // the process ran with a plan file (usable or not)
  int64_t plans_in_file = -1;  // pinned plans the shim read; 0: the file could not be used
  int selections = 0;          // selections of problems the file names
  int pinned = 0;              // of them, ended on the pinned plan after one candidate
  int pinned_problems = 0;
  int answered = 0;            // pinned selections whose heuristics query the shim answered itself
  double saved_ms = 0;         // what the searches pinning replaced took in the run the file came from
  int saved_known = 0;         // pinned selections whose search time the file gave
  double took_ms = 0;          // what the pinned selections took here
  int not_in_file = 0;         // selections (searches) of problems the file does not name: chosen as usual
  // Outcomes in the order of their names, as the texts and the evidence list them.
  struct ByName {
    bool operator()(trace::PinOutcome a, trace::PinOutcome b) const;
  };
  std::map<trace::PinOutcome, int, ByName> asides;                  // step-aside outcome -> selections
  std::map<trace::PinOutcome, std::string, ByName> aside_example;  // outcome -> a problem it happened to
  std::map<uint64_t, trace::PinOutcome> state;  // problem hash -> kPinned or the step-aside outcome
  int asides_total() const;
};

PinSummary pin_summary(const ProcessFacts& p);
// "68 of 68 selections ended on the pinned plan after one candidate (...); ..." ("" when inactive).
std::string pin_text(const PinSummary& s);
nlohmann::json pin_json(const PinSummary& s);

}  // namespace cuprobe::analysis
