// What the search budget (docs/search-budget.md; shim/search_budget.h) did in one process: the
// selections it gave cuDNN's heuristic choice instead of a benchmark search, what those searches
// were expected to cost, what choosing them took, and what the searches that ran cost the job.
// Read from the trace's kSearchBudget property, its kBudgeted PinRecords and the process's
// rebuilt searches.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/facts.h"

namespace cuprobe::analysis {

struct BudgetSummary {
  bool active = false;     // the process ran with a search budget
  double budget_pct = -1;  // the budget, percent of the job's time
  int budgeted = 0;        // selections given cuDNN's heuristic choice
  int budgeted_problems = 0;
  int budgeted_legacy = 0;      // of them, legacy cudnnFind* calls answered with cudnnGet*_v7
  int budgeted_no_fallback = 0;  // of them, selections whose fallback-list query the shim answered empty
  double expected_ms = 0;       // what searches of those selections were expected to cost (the mean so far, each)
  double took_ms = 0;           // what the budgeted selections took (rebuilt: heuristics, one plan built and timed)
  // Of took_ms (backend selections): waiting for the device (the timing runs), building plans,
  // launching runs, cuDNN's heuristics queries; the rest is the framework's work between the calls.
  double took_wait_ms = 0, took_build_ms = 0, took_launch_ms = 0, took_heur_ms = 0;
  double first_share_pct = -1;  // the searches' share of the job's time when the first was budgeted
  int searches = 0;             // benchmark searches that ran (steered ones aside)
  double search_ms = 0;         // their time
  double job_ms = 0;            // the job's span (its first cuDNN/CUDA work to its last event)
  // Deferred searches: budgeted problems searched later, when their plans kept running and the
  // budget allowed; of them, those a faster plan replaced, and what the budgeted plans cost per run
  // against the winners (measured by the shim on the job's own data: the steady-state price of
  // running on heuristic plans).
  int searched_later = 0;
  int searched_later_moved = 0;
  double searched_later_ms = 0;  // what the deferred searches took
  double heuristic_run_ms = 0;   // per run, summed over the problems searched later: the budgeted plans
  double winner_run_ms = 0;      // ... and the plans that run now
};

BudgetSummary budget_summary(const ProcessFacts& p);
// "search budget 5%: 9 selections (9 problems) took cuDNN's heuristic choice ..." ("" when inactive).
std::string budget_text(const BudgetSummary& s);
nlohmann::json budget_json(const BudgetSummary& s);

}  // namespace cuprobe::analysis
