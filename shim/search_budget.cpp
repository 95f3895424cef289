// The search budget: see search_budget.h.
//
// A search is measured as the analyzer rebuilds it (analyzer/trace/searches.h), live and per
// thread: it begins at the heuristics query of a problem and ends when a plan it already ran
// runs again outside a timing (the winner's first real run), or when the thread begins another
// selection; it was a benchmark search if a cudaEventElapsedTime came in between. Heuristic
// selections (cudnn.benchmark off) are never timed, so they cost the budget nothing and a process
// that only makes them is never budgeted. A legacy cudnnFind* call is a search of its own length.
#include "search_budget.h"

#include <cudnn.h>

#include "capture_cudnn_detail.h"
#include "clock.h"
#include "env_config.h"
#include "fork.h"
#include "plan_pins.h"

namespace cuprobe::shim {

bool g_budget_on = false;

namespace {

uint64_t g_budget = 0;  // hundredths of a percent of the job's time

// The process's searches so far, and when its first selection began.
uint64_t g_first_ns;
uint64_t g_search_ns;
uint64_t g_searches;
// The warm-up ended: a convolution layer was asked for a second shape.
bool g_dynamic;

// Convolution layers seen: the layer's key -> the first problem of it. Open addressing,
// lock-free (a key is claimed by compare-exchange from 0); full: no more layers are learned.
constexpr uint32_t kLayers = 4096;
struct Layer {
  uint64_t key;
  uint64_t problem;
};
Layer g_layers[kLayers];

// The selection this thread is in.
constexpr int kRemembered = 16;  // plans of one selection whose runs are told apart
struct Clock {
  uint64_t hash;   // the problem, 0: none open
  uint64_t start;  // mono_ns
  uint64_t last;   // the latest call of the selection
  const void* executed[kRemembered];
  uint8_t n_executed;
  uint8_t timed;           // a cudaEventElapsedTime came: a benchmark search
  uint8_t record_pending;  // an event was recorded since the last execute, synchronize or elapsed time
  uint8_t budgeted;        // the budget answers this selection
  uint8_t built;           // budgeted: its plan was built, later candidates fail fast
  uint8_t legacy;          // a legacy cudnnFind* call is in flight (hash 0)
  float share_pct;         // budgeted: the searches' share of the job's time when it was decided
  float expected_ms;       // budgeted: what a search was expected to cost
  const void* candidate;   // budgeted: the plan being finalized
};
__thread Clock t_clock __attribute__((tls_model("initial-exec")));

// The child's searches and shapes are its own.
void clock_after_fork() {
  t_clock = Clock{};
  __atomic_store_n(&g_dynamic, false, __ATOMIC_RELAXED);
  for (Layer& l : g_layers) l = Layer{};
  __atomic_store_n(&g_search_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_searches, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_first_ns, 0, __ATOMIC_RELAXED);
}
CUPROBE_FORK_CHILD_RESET(clock_after_fork);

void add_search(uint64_t ns) {
  __atomic_add_fetch(&g_search_ns, ns, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g_searches, 1, __ATOMIC_RELAXED);
}

// Closes the thread's open selection, counting it when it was a benchmark search.
void close_clock() {
  Clock& c = t_clock;
  if (c.hash != 0 && c.timed && !c.budgeted && c.last > c.start) add_search(c.last - c.start);
  c.hash = 0;
}

// Whether a new selection beginning now would take the searches past the budget (*share and
// *expected say how it stood).
bool over_budget(uint64_t now, float* share_pct, float* expected_ms) {
  uint64_t first = __atomic_load_n(&g_first_ns, __ATOMIC_RELAXED);
  if (first == 0) return false;
  uint64_t n = __atomic_load_n(&g_searches, __ATOMIC_RELAXED);
  if (n == 0 || !__atomic_load_n(&g_dynamic, __ATOMIC_RELAXED)) return false;
  uint64_t spent = __atomic_load_n(&g_search_ns, __ATOMIC_RELAXED);
  uint64_t mean = spent / n;
  uint64_t elapsed = now > first ? now - first : 1;
  *share_pct = float(100.0 * double(spent) / double(elapsed));
  *expected_ms = float(double(mean) / 1e6);
  // After a search of the mean's length the share would be (spent + mean) / (elapsed + mean): over
  // budget / 10000? In integers wide enough for a year of nanoseconds.
  return (unsigned __int128)(spent + mean) * 10000u > (unsigned __int128)(elapsed + mean) * g_budget;
}

// A selection begins now: the first one is where the job's time starts for the budget. Whether it
// is to be budgeted (never a problem the plan file names: those are pinning's).
uint8_t begin_selection(uint64_t now, uint64_t hash, Clock& c) {
  uint64_t expected = 0;
  __atomic_compare_exchange_n(&g_first_ns, &expected, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return !pin_names(hash) && over_budget(now, &c.share_pct, &c.expected_ms) ? 1 : 0;
}

void write_budgeted(ThreadState& t, uint32_t problem, uint64_t hash, int64_t engine, uint32_t knobs, bool legacy) {
  const Clock& c = t_clock;
  write_pin_record(t, trace::PinOutcome::kBudgeted, problem, hash, engine, knobs, legacy ? trace::kPinLegacy : 0,
                   c.share_pct, c.expected_ms);
}

}  // namespace

void budget_configure() {
  const char* v = env_value(env::Id::kSearchBudget);
  if (v == nullptr) return;
  g_budget = env_number(env::Id::kSearchBudget);
  g_budget_on = true;
}

void write_budget_property() {
  if (g_budget_on) write_property(trace::Property::kSearchBudget, int64_t(g_budget));
}

void budget_new_problem(const trace::ProblemDesc& d) {
  if (!g_budget_on || (d.flags & trace::kProblemHasConv) == 0) return;
  uint64_t key = trace::layer_hash(d);
  uint64_t problem = trace::problem_hash(d);
  for (uint32_t i = 0; i < kLayers; ++i) {
    Layer& l = g_layers[(key + i) % kLayers];
    uint64_t expected = 0;
    if (__atomic_compare_exchange_n(&l.key, &expected, key, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      __atomic_store_n(&l.problem, problem, __ATOMIC_RELEASE);
      return;
    }
    if (expected != key) continue;
    uint64_t first = __atomic_load_n(&l.problem, __ATOMIC_ACQUIRE);
    if (first != 0 && first != problem) __atomic_store_n(&g_dynamic, true, __ATOMIC_RELAXED);
    return;
  }
}

void budget_heuristics_query(void* heur_desc) {
  DescEntry* heur = desc_find(heur_desc);
  if (heur == nullptr || heur->kind != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR || !heur->finalized ||
      heur->u.heur.mode == CUDNN_HEUR_MODE_FALLBACK) {
    return;
  }
  ProblemLink link = heur_problem(*heur);
  Clock& c = t_clock;
  if (link.hash == 0 || link.hash == c.hash) return;  // the count query, then the results: one selection
  close_clock();
  uint64_t now = mono_ns();
  c = Clock{};
  c.hash = link.hash;
  c.start = c.last = now;
  c.budgeted = begin_selection(now, link.hash, c);
}

bool budget_finalize_before(ThreadState&, void* plan_desc, int* code, FaultHit* hit) {
  Clock& c = t_clock;
  if (c.hash == 0) return false;
  c.last = mono_ns();
  if (!c.budgeted) return false;
  DescEntry* e = desc_find(plan_desc);
  if (e == nullptr || e->kind != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) return false;
  EngineCfgState* cfg = plan_cfg(e->u.plan);
  if (cfg == nullptr || cfg->problem.hash != c.hash) return false;
  if (!c.built) {
    c.candidate = plan_desc;
    return false;
  }
  *code = CUDNN_STATUS_NOT_SUPPORTED;
  pin_mark_call(hit);
  return true;
}

void budget_finalize_after(ThreadState& t, void* plan_desc, int status) {
  Clock& c = t_clock;
  if (c.hash == 0 || c.candidate != plan_desc || plan_desc == nullptr) return;
  c.candidate = nullptr;
  if (status != CUDNN_STATUS_SUCCESS) return;  // the next candidate may build
  c.built = 1;
  DescEntry* e = desc_find(plan_desc);
  if (e == nullptr) return;
  write_budgeted(t, e->u.plan.problem_id, c.hash, e->u.plan.engine, e->u.plan.knobs_id, false);
}

void budget_execute_before(void* plan_desc) {
  Clock& c = t_clock;
  if (c.hash == 0) return;
  DescEntry* e = desc_find(plan_desc);
  if (e == nullptr || e->kind != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || e->u.plan.problem_hash != c.hash) {
    close_clock();  // another problem's plan runs: the selection is over
    return;
  }
  bool timed_run = c.record_pending != 0;
  c.record_pending = 0;
  bool ran_before = false;
  for (int i = 0; i < c.n_executed && !ran_before; ++i) ran_before = c.executed[i] == plan_desc;
  if (!timed_run && ran_before && c.timed) {
    c.last = mono_ns();  // the winner's first real run: the search ends where it begins
    close_clock();
    return;
  }
  if (!ran_before && c.n_executed < kRemembered) c.executed[c.n_executed++] = plan_desc;
}

// A candidate's run ends: the selection lasts at least until here (a run that closed it left no
// selection open).
void budget_execute_after() {
  Clock& c = t_clock;
  if (c.hash != 0) c.last = mono_ns();
}

void budget_event(BudgetEvent what) {
  Clock& c = t_clock;
  if (c.hash == 0) return;
  c.last = mono_ns();
  if (what == BudgetEvent::kRecord) {
    c.record_pending = 1;
  } else {
    c.record_pending = 0;
    if (what == BudgetEvent::kElapsed) c.timed = 1;
  }
}

// Legacy searches are single calls: the thread's clock holds the one in flight.
bool budget_legacy_find(uint64_t problem_hash) {
  close_clock();
  Clock& c = t_clock;
  uint64_t now = mono_ns();
  c = Clock{};
  c.start = now;
  c.legacy = 1;
  c.budgeted = begin_selection(now, problem_hash, c);
  return c.budgeted != 0;
}

void budget_legacy_answered(ThreadState& t, uint32_t problem, uint64_t hash, int64_t algo, FaultHit* hit) {
  pin_mark_call(hit);
  write_budgeted(t, problem, hash, algo, 0, true);
  t_clock = Clock{};
}

void budget_legacy_searched() {
  Clock& c = t_clock;
  uint64_t now = mono_ns();
  // Only a Find the shim did not answer gets here: it searched, even one the budget meant to
  // answer when cudnnGet*_v7 failed.
  if (c.legacy && now > c.start) add_search(now - c.start);
  t_clock = Clock{};
}

}  // namespace cuprobe::shim
