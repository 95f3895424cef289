// The search budget (CUPROBE_SEARCH_BUDGET, `cuprobe record --search-budget PCT`;
// docs/search-budget.md): cuDNN benchmark searches (cudnn.benchmark) stay within a share of the
// job's time. The shim measures each search as it happens and, once the searches' share of the
// time since the process's first plan selection would pass the budget, answers a new problem's
// selection with cuDNN's heuristic choice instead of a timed search:
//   backend  cuDNN's heuristics are asked as usual; the first candidate plan that builds is the
//            selection's plan and every later candidate's finalize fails fast (NOT_SUPPORTED,
//            without calling cuDNN), so the framework's search times one plan. The application's
//            own filters (determinism, TF32) act before it builds plans, so they are kept. cuDNN's
//            fallback list is answered empty once the shim has seen a ranked configuration build.
//   legacy   a cudnnFind* call is answered with cudnnGet*_v7's answer (cuDNN's heuristics,
//            sorted, with statuses and workspaces) instead of timing every algorithm.
// Each such selection is one PinRecord with outcome kBudgeted.
//
// Deferred searches (backend, a plain convolution): a budgeted selection keeps the application's
// configurations of the candidates it asked for (past their destroy); once its plan has run kDeferRuns times and the
// budget allows, the shim times them on the job's own data before a run and swaps the fastest in for the rest of the
// process (one PinRecord kSearchedLater; search_budget.cpp says when it never does).
//
// Warm-up: every layer's first search runs. A fixed-shape job searches each layer once, in its
// first step, and nothing then tells it apart from a storm's first step; the budget applies from
// the first time a convolution layer (its weights, parameters and data types) is asked for a
// second input shape. A process that never searched (cudnn.benchmark off) is never budgeted.
//
// Costs nothing without a budget (the hooks' steering branch is off unless a plan file or a
// budget is in force); with one, a few thread-local checks per cuDNN execute and event call.
#pragma once

#include <stdint.h>

#include "cuprobe/problem.h"
#include "faults.h"
#include "recorder.h"

namespace cuprobe::shim {

extern bool g_budget_on;

// Reads CUPROBE_SEARCH_BUDGET (once per process, at configuration).
void budget_configure();
// Writes the kSearchBudget property into a new trace (when a budget is in force).
void write_budget_property();
// Every new cuDNN problem (problem_table.cpp): a convolution layer seen with a second shape ends
// the warm-up.
void budget_new_problem(const trace::ProblemDesc& d);

// Backend selections, per thread. A heuristics query (count or results, not the fallback list)
// for a problem other than the thread's open selection begins one.
void budget_heuristics_query(void* heur_desc);
// The ranked list's results (not the fallback list's) for the thread's open selection.
void budget_heuristics_results(void* heur_desc, int64_t count, void* const* cfgs);
// The fallback list's query (count or results) in a budgeted selection: true when the shim
// answers it with an empty list (one of the ranked configurations builds; search_budget.cpp).
bool budget_fallback_answer(void* heur_desc, FaultHit* hit);
// A plan finalize: true with *code when the budget fails this candidate fast.
bool budget_finalize_before(ThreadState& t, void* plan_desc, int* code, FaultHit* hit);
void budget_finalize_after(ThreadState& t, void* plan_desc, int status);
// Before a plan runs (the hooks' rewrite step): the thread's selection clock sees the run; a
// budgeted plan due for its deferred search gets it now; one a deferred search replaced becomes
// the winner (*plan).
void budget_execute(ThreadState& t, void* handle, void** plan, void* pack);
void budget_execute_after();
// A descriptor the application destroys: an execution plan's deferred search, if any, and its
// winner go; true for a configuration a deferred search keeps (the destroy is answered, not done).
bool budget_destroy_before(void* desc);
// cudaEventRecord, cudaEventSynchronize and cudaEventElapsedTime on this thread: a benchmark
// search times each candidate between two event records.
enum class BudgetEvent { kRecord, kSync, kElapsed };
void budget_event(BudgetEvent what);

// Legacy cudnnFind*: true when the budget answers this search (then the caller answers it with
// cudnnGet*_v7 and calls budget_legacy_answered); false: the search runs, and its time is
// counted by budget_legacy_searched.
bool budget_legacy_find(uint64_t problem_hash);
void budget_legacy_answered(ThreadState& t, uint32_t problem, uint64_t hash, int64_t algo, FaultHit* hit);
void budget_legacy_searched();

}  // namespace cuprobe::shim
