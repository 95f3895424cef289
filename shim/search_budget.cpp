// The search budget: see search_budget.h.
//
// A search is measured as the analyzer rebuilds it (analyzer/trace/searches.h), live and per
// thread: it begins at the heuristics query of a problem and ends when a plan it already ran
// runs again outside a timing (the winner's first real run), or when the thread begins another
// selection; it was a benchmark search if a cudaEventElapsedTime came in between. Heuristic
// selections (cudnn.benchmark off) are never timed, so they cost the budget nothing and a process
// that only makes them is never budgeted. A legacy cudnnFind* call is a search of its own length.
#include "search_budget.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <sys/mman.h>

#include "capture_cudnn_detail.h"
#include "clock.h"
#include "env_config.h"
#include "fork.h"
#include "plan_pins.h"
#include "resolve.h"

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
  uint8_t record_pending;  // an event was recorded since the last synchronize or elapsed time
  uint8_t budgeted;        // the budget answers this selection
  uint8_t built;           // budgeted: its plan was built, later candidates fail fast
  uint8_t legacy;          // a legacy cudnnFind* call is in flight (hash 0)
  float share_pct;         // budgeted: the searches' share of the job's time when it was decided
  float expected_ms;       // budgeted: what a search was expected to cost
  const void* candidate;   // budgeted: the plan being finalized
  uint16_t slot;           // budgeted and deferrable: its deferred-search slot + 1
  uint8_t fallback;        // budgeted: cuDNN's fallback list 0 not asked for yet, 1 answered empty, 2 cuDNN's
  uint8_t n_ranked;
  void* ranked[8];         // budgeted: the first configurations of cuDNN's ranked list
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

// ---- Deferred searches ----------------------------------------------------------------------
//
// A budgeted selection of a plain convolution (one operation whose beta is 0, a variant pack
// without aliased buffers) keeps the configurations the application asked to build after the
// first: what passed the application's own filters (determinism, TF32). They are the
// application's descriptors, kept past its destroy (answered without destroying: cuDNN keeps what
// a configuration needs of its destroyed operation graph). Once the budgeted plan has run
// kDeferRuns times and one more search of the mean length fits the budget, its next run is
// preceded by the search: a plan is built from each kept configuration on the run's handle, those
// whose workspace fits the budgeted plan's (the workspace the application gives every run) are
// timed with the budgeted plan on the run's own variant pack (the output is written, then
// overwritten by the run itself), and the fastest runs in place of the budgeted plan from then on
// (the hooks' rewrite step), registered in the mirror so that its runs are recorded as its own.
// The search counts against the budget like any other.

constexpr uint32_t kDeferRuns = 3;  // runs of a budgeted plan before its problem may be searched later
constexpr uint32_t kSlots = 1024;   // budgeted problems waiting for a deferred search at once
constexpr int kCopies = 8;          // configurations kept per problem
constexpr int kTimedRuns = 3;       // timed runs per plan, after one untimed

enum SlotState : uint32_t { kFree, kFilling, kWaiting, kSearching, kDone };

// A candidate's configuration, the application's own descriptor, kept from its destruction.
struct Kept {
  void* cfg;
  int64_t engine_index;
  uint32_t knobs_id;
};

struct Deferred {
  uint32_t state;
  uint32_t runs;
  const void* plan;    // the application's budgeted plan
  void* winner;        // the shim's plan that runs in its place, nullptr none
  const void* handle;  // the handle `winner` was built on
  uint8_t n;
  Kept kept[kCopies];
};

Deferred* g_slots;
uint32_t g_slots_live;

Deferred* slots() {
  Deferred* s = __atomic_load_n(&g_slots, __ATOMIC_ACQUIRE);
  if (s != nullptr) return s;
  void* mem = mmap(nullptr, sizeof(Deferred) * kSlots, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  Deferred* expected = nullptr;
  if (__atomic_compare_exchange_n(&g_slots, &expected, static_cast<Deferred*>(mem), false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    return static_cast<Deferred*>(mem);
  }
  munmap(mem, sizeof(Deferred) * kSlots);
  return expected;
}

// A free slot for a budgeted selection (index + 1), 0 when none is free.
uint16_t claim_slot() {
  Deferred* s = slots();
  if (s == nullptr) return 0;
  for (uint32_t i = 0; i < kSlots; ++i) {
    uint32_t expected = kFree;
    if (__atomic_compare_exchange_n(&s[i].state, &expected, kFilling, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      s[i].runs = 0;
      s[i].plan = nullptr;
      s[i].winner = nullptr;
      s[i].handle = nullptr;
      s[i].n = 0;
      __atomic_add_fetch(&g_slots_live, 1, __ATOMIC_RELAXED);
      return uint16_t(i + 1);
    }
  }
  return 0;
}

// The kept configurations go.
void drop_kept(Deferred& d, const BackendFns& b) {
  for (uint8_t i = 0; i < d.n; ++i) {
    // One the application has not destroyed yet is its own again (its destroy will do); one it
    // has is the shim's to destroy (cuDNN never had it back, so its address was never reused).
    DescEntry* ce = desc_find(d.kept[i].cfg);
    if (ce != nullptr && ce->kind == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && ce->kept_by_budget) {
      ce->kept_by_budget = 0;
    } else if (d.kept[i].cfg != nullptr) {
      b.destroy(d.kept[i].cfg);
    }
    d.kept[i] = Kept{};
  }
  d.n = 0;
}

// Everything the slot holds goes, the plan it names forgets it, and the slot is free again.
void release_slot(uint16_t slot) {
  Deferred* s = slots();
  if (s == nullptr || slot == 0) return;
  Deferred& d = s[slot - 1];
  BackendFns b = backend_fns();
  drop_kept(d, b);
  if (d.winner != nullptr) {
    desc_destroy(d.winner);
    b.destroy(d.winner);
    d.winner = nullptr;
  }
  if (d.plan != nullptr) {
    DescEntry* e = desc_find(d.plan);
    if (e != nullptr && e->kind == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && e->u.plan.deferred == slot)
      e->u.plan.deferred = 0;
    d.plan = nullptr;
  }
  __atomic_store_n(&d.state, kFree, __ATOMIC_RELEASE);
  __atomic_sub_fetch(&g_slots_live, 1, __ATOMIC_RELAXED);
}

// Whether a heuristics query's problem is one a deferred search may rerun: one convolution that
// only writes its output.
bool deferrable(void* heur_desc) {
  const DescEntry* g = graph_of_heur(desc_find(heur_desc));
  if (g == nullptr || g->kind != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR || g->u.graph.n_ops != 1) return false;
  const DescEntry* op = desc_find(g->u.graph.ops[0]);
  if (op == nullptr) return false;
  bool conv = op->kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
              op->kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
              op->kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
  return conv && !op->u.op.accumulates;
}

// The CUDA runtime's functions a deferred search times plans with (the real ones: the shim's own
// calls are not the application's and are not recorded).
struct Timing {
  cudaError_t (*create)(cudaEvent_t*);
  cudaError_t (*record)(cudaEvent_t, cudaStream_t);
  cudaError_t (*sync)(cudaEvent_t);
  cudaError_t (*elapsed)(float*, cudaEvent_t, cudaEvent_t);
  cudaError_t (*destroy)(cudaEvent_t);
  cudaError_t (*last_error)();
  cudaError_t (*peek)();
  cudaError_t (*capturing)(cudaStream_t, cudaStreamCaptureStatus*);
  cudnnStatus_t (*get_stream)(cudnnHandle_t, cudaStream_t*);
  cudnnStatus_t (*execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
  bool ok() const {
    return create && record && sync && elapsed && destroy && last_error && peek && get_stream && execute;
  }
};

Timing timing_fns() {
  Timing f{};
  f.create = reinterpret_cast<decltype(f.create)>(real_function(ApiId::cudaEventCreate));
  f.record = reinterpret_cast<decltype(f.record)>(real_function(ApiId::cudaEventRecord));
  f.sync = reinterpret_cast<decltype(f.sync)>(real_function(ApiId::cudaEventSynchronize));
  f.elapsed = reinterpret_cast<decltype(f.elapsed)>(real_function(ApiId::cudaEventElapsedTime));
  f.destroy = reinterpret_cast<decltype(f.destroy)>(real_function(ApiId::cudaEventDestroy));
  f.last_error = reinterpret_cast<decltype(f.last_error)>(real_function(ApiId::cudaGetLastError));
  f.peek = reinterpret_cast<decltype(f.peek)>(real_function(ApiId::cudaPeekAtLastError));
  f.capturing =
      reinterpret_cast<decltype(f.capturing)>(resolve_in_library(trace::Library::kCudart, "cudaStreamIsCapturing"));
  f.get_stream = reinterpret_cast<decltype(f.get_stream)>(real_function(ApiId::cudnnGetStream));
  f.execute = reinterpret_cast<decltype(f.execute)>(real_function(ApiId::cudnnBackendExecute));
  return f;
}

// One plan's time per run on the application's variant pack, -1 when it does not run.
float time_plan(const Timing& f, cudnnHandle_t h, cudaStream_t s, void* plan, void* pack, cudaEvent_t a,
                cudaEvent_t z) {
  if (f.execute(h, plan, pack) != CUDNN_STATUS_SUCCESS) return -1;  // untimed: the first run warms up
  if (f.record(a, s) != cudaSuccess) return -1;
  for (int i = 0; i < kTimedRuns; ++i) {
    if (f.execute(h, plan, pack) != CUDNN_STATUS_SUCCESS) return -1;
  }
  float ms = 0;
  if (f.record(z, s) != cudaSuccess || f.sync(z) != cudaSuccess || f.elapsed(&ms, a, z) != cudaSuccess) return -1;
  return ms / kTimedRuns;
}

// The deferred search of slot `d` before a run of its plan (`entry`) with `handle` and `pack`.
void deferred_search(ThreadState& t, Deferred& d, DescEntry& entry, cudnnHandle_t handle, void* pack) {
  uint64_t start = mono_ns();
  BackendFns b = backend_fns();
  Timing f = timing_fns();
  const DescEntry* p = desc_find(pack);
  cudaStream_t stream = nullptr;
  if (!b.ok() || !f.ok() || p == nullptr || p->kind != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || p->u.pack.aliased ||
      f.get_stream(handle, &stream) != CUDNN_STATUS_SUCCESS) {
    // Never: a run whose buffers overlap is not rerun (nor one the shim cannot time).
    release_slot(entry.u.plan.deferred);
    return;
  }
  // Not now: with an error the application has not collected yet (the shim would clear it with
  // its own), or inside a CUDA graph capture (or where the runtime cannot tell); a later run may.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t pending = f.peek();
  cudaError_t asked = pending == cudaSuccess && f.capturing != nullptr ? f.capturing(stream, &capture) : cudaSuccess;
  if (pending != cudaSuccess || asked != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    if (asked != cudaSuccess) f.last_error();  // the shim's question is not the application's error
    d.runs = 0;
    __atomic_store_n(&d.state, kWaiting, __ATOMIC_RELEASE);
    return;
  }
  const PlanState& budgeted = entry.u.plan;
  void* plans[kCopies] = {};
  int64_t spaces[kCopies] = {};
  for (uint8_t i = 0; i < d.n; ++i) {
    void* plan = nullptr;
    int64_t ws = -1, n = 0;
    bool built =
        b.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) == CUDNN_STATUS_SUCCESS &&
        b.set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) == CUDNN_STATUS_SUCCESS &&
        b.set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d.kept[i].cfg) ==
            CUDNN_STATUS_SUCCESS &&
        b.finalize(plan) == CUDNN_STATUS_SUCCESS &&
        b.get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) == CUDNN_STATUS_SUCCESS &&
        ws >= 0 && uint64_t(ws) <= budgeted.workspace;
    if (built) {
      plans[i] = plan;
      spaces[i] = ws;
    } else if (plan != nullptr) {
      b.destroy(plan);
    }
  }
  cudaEvent_t a = nullptr, z = nullptr;
  float base = -1, best = -1;
  int best_at = -1;
  bool events = f.create(&a) == cudaSuccess && f.create(&z) == cudaSuccess;
  if (events) {
    base = time_plan(f, handle, stream, const_cast<void*>(d.plan), pack, a, z);
    best = base;
    for (uint8_t i = 0; base >= 0 && i < d.n; ++i) {
      if (plans[i] == nullptr) continue;
      float ms = time_plan(f, handle, stream, plans[i], pack, a, z);
      if (ms >= 0 && ms < best) {
        best = ms;
        best_at = i;
      }
    }
  }
  if (a != nullptr) f.destroy(a);
  if (z != nullptr) f.destroy(z);
  if (f.peek() != cudaSuccess) f.last_error();  // the shim's own, none was pending before
  for (uint8_t i = 0; i < d.n; ++i) {
    if (plans[i] != nullptr && int(i) != best_at) b.destroy(plans[i]);
  }
  if (best_at >= 0) {
    // The winner is recorded as the plan it is: the budgeted plan's problem, its own engine, knobs
    // and workspace.
    DescEntry* w = desc_create(plans[best_at], CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (w == nullptr) {
      b.destroy(plans[best_at]);
      best_at = -1;
      best = base;
    } else {
      w->finalized = 1;
      w->u.plan = budgeted;
      w->u.plan.cfg = nullptr;
      w->u.plan.handle = handle;
      w->u.plan.engine = d.kept[best_at].engine_index;
      w->u.plan.knobs_id = d.kept[best_at].knobs_id;
      w->u.plan.workspace = uint64_t(spaces[best_at]);
      w->u.plan.executions = 0;
      w->u.plan.deferred = 0;
      d.winner = plans[best_at];
      d.handle = handle;
    }
  }
  uint64_t took = mono_ns() - start;
  add_search(took);
  if (base >= 0) {
    bool moved = best_at >= 0;
    write_pin_record(t, trace::PinOutcome::kSearchedLater, budgeted.problem_id, budgeted.problem_hash,
                     moved ? d.kept[best_at].engine_index : budgeted.engine,
                     moved ? d.kept[best_at].knobs_id : budgeted.knobs_id, moved ? trace::kPinMoved : 0, best,
                     float(double(took) / 1e6), base);
  }
  // The configurations are done with; a slot without a winner has nothing left to do.
  if (d.winner == nullptr) {
    release_slot(entry.u.plan.deferred);
    return;
  }
  drop_kept(d, b);
  __atomic_store_n(&d.state, kDone, __ATOMIC_RELEASE);
}

// Closes the thread's open selection, counting it when it was a benchmark search.
// Closes the thread's open selection, counting it when it was a benchmark search. A budgeted
// selection that left nothing to search later gives its slot back.
void close_clock() {
  Clock& c = t_clock;
  if (c.hash != 0 && c.timed && !c.budgeted && c.last > c.start) add_search(c.last - c.start);
  if (c.slot != 0) {
    Deferred& d = slots()[c.slot - 1];
    if (d.plan == nullptr || d.n == 0) release_slot(c.slot);
    c.slot = 0;
  }
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
  uint32_t flags = (legacy ? trace::kPinLegacy : 0) | (c.fallback == 1 ? trace::kPinNoFallback : 0);
  write_pin_record(t, trace::PinOutcome::kBudgeted, problem, hash, engine, knobs, flags, c.share_pct, c.expected_ms);
}

// ---- cuDNN's fallback list ---------------------------------------------------------------------
//
// cudnn-frontend's benchmark path asks cuDNN for its ranked list and then for its fallback list
// before it builds any plan; the fallback query alone costs a budgeted selection about as much as
// the rest of its choosing (0.6-0.8 ms per query on the H100 and H200, docs/dev/performance.md).
// A budgeted selection ends on the first candidate that builds, so the fallback list matters only
// when no ranked configuration builds. The shim checks that one does before the fallback query
// reaches cuDNN: it builds a plan of its own (on the graph's handle, then destroys it) from the
// first ranked configurations, skipping any the framework could filter out (a NONDETERMINISTIC or
// DOWN_CONVERT_INPUTS note; TENSOR_CORE where the graph has float tensors, which PyTorch drops
// with TF32 off) and any compiled at build time (it would be compiled twice). When one builds, the
// application builds it too, and the fallback query is answered with an empty list; otherwise
// cuDNN answers it as usual.

// Whether any tensor of the graph's operations is float (CUDNN_DATA_FLOAT).
bool graph_has_float(const DescEntry& g) {
  for (uint8_t i = 0; i < g.u.graph.n_ops; ++i) {
    const DescEntry* op = desc_find(g.u.graph.ops[i]);
    if (op == nullptr) continue;
    for (void* td : op->u.op.tensors) {
      const DescEntry* te = td != nullptr ? desc_find(td) : nullptr;
      if (te != nullptr && te->kind == CUDNN_BACKEND_TENSOR_DESCRIPTOR && te->u.tensor.dtype == CUDNN_DATA_FLOAT) {
        return true;
      }
    }
  }
  return false;
}

// Whether a plan of one of the thread's ranked configurations that every framework filter keeps
// builds on the graph's handle.
bool ranked_config_builds(const DescEntry& g) {
  Clock& c = t_clock;
  BackendFns b = backend_fns();
  void* handle = g.u.graph.handle;
  if (!b.ok() || handle == nullptr) return false;
  uint32_t dropped = (1u << CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) | (1u << CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) |
                     (graph_has_float(g) ? 1u << CUDNN_NUMERICAL_NOTE_TENSOR_CORE : 0u);
  for (uint8_t i = 0; i < c.n_ranked; ++i) {
    DescEntry* ce = desc_find(c.ranked[i]);
    if (ce == nullptr || ce->kind != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) continue;
    EngineCfgState& cfg = ce->u.cfg;
    if (!cfg.queried) query_cfg(cfg, c.ranked[i]);
    if (cfg.engine_index < 0 || (cfg.notes & dropped) != 0 ||
        (cfg.behavior & (1u << CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) != 0) {
      continue;
    }
    void* plan = nullptr;
    bool built = b.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) == CUDNN_STATUS_SUCCESS &&
                 b.set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) == CUDNN_STATUS_SUCCESS &&
                 b.set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c.ranked[i]) ==
                     CUDNN_STATUS_SUCCESS &&
                 b.finalize(plan) == CUDNN_STATUS_SUCCESS;
    if (plan != nullptr) b.destroy(plan);
    if (built) return true;
  }
  return false;
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
  if (c.budgeted && deferrable(heur_desc)) c.slot = claim_slot();
}

void budget_heuristics_results(void* heur_desc, int64_t count, void* const* cfgs) {
  Clock& c = t_clock;
  if (!c.budgeted || c.built || c.legacy) return;
  const DescEntry* heur = desc_find(heur_desc);
  if (heur == nullptr || heur->kind != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR ||
      heur->u.heur.mode == CUDNN_HEUR_MODE_FALLBACK || heur_problem(*heur).hash != c.hash) {
    return;
  }
  c.n_ranked = 0;
  for (int64_t i = 0; i < count && c.n_ranked < sizeof c.ranked / sizeof c.ranked[0]; ++i) c.ranked[c.n_ranked++] = cfgs[i];
}

bool budget_fallback_answer(void* heur_desc, FaultHit* hit) {
  Clock& c = t_clock;
  if (!c.budgeted || c.built || c.legacy || c.fallback == 2) return false;
  const DescEntry* heur = desc_find(heur_desc);
  if (heur == nullptr || heur->kind != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR || !heur->finalized ||
      heur->u.heur.mode != CUDNN_HEUR_MODE_FALLBACK || heur_problem(*heur).hash != c.hash) {
    return false;
  }
  if (c.fallback == 0) {
    const DescEntry* g = graph_of_heur(heur);
    bool ok = g != nullptr && g->kind == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && ranked_config_builds(*g);
    c.fallback = ok ? 1 : 2;
    if (!ok) return false;
  }
  pin_mark_call(hit);
  return true;
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
  // A later candidate (the application's filters let it through): its configuration is kept for
  // a deferred search. The application's destroy of it is answered without destroying it.
  if (c.slot != 0) {
    Deferred& d = slots()[c.slot - 1];
    DescEntry* ce = desc_find(e->u.plan.cfg);
    if (d.n < kCopies && ce != nullptr && ce->kind == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && !ce->owned_by_pins &&
        !ce->kept_by_budget) {
      ce->kept_by_budget = 1;
      d.kept[d.n++] = Kept{e->u.plan.cfg, cfg->engine_index, cfg_knobs_id(*cfg)};
    }
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
  if (c.slot != 0) {
    slots()[c.slot - 1].plan = plan_desc;
    e->u.plan.deferred = c.slot;
  }
  write_budgeted(t, e->u.plan.problem_id, c.hash, e->u.plan.engine, e->u.plan.knobs_id, false);
}

namespace {

// The thread's open selection sees one of its problem's plans run (`e`: the plan's mirror entry,
// nullptr when unknown): a timed candidate, or the winner's first real run that ends the search;
// another problem's plan ends it too.
void clock_run(const DescEntry* e, const void* plan_desc) {
  Clock& c = t_clock;
  if (c.hash == 0) return;
  if (e == nullptr || e->kind != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || e->u.plan.problem_hash != c.hash) {
    close_clock();  // another problem's plan runs: the selection is over
    return;
  }
  // Runs between an event record and the next synchronize or elapsed time are timed (PyTorch
  // times one, cudnn-frontend's autotune several of the same plan).
  bool timed_run = c.record_pending != 0;
  bool ran_before = false;
  for (int i = 0; i < c.n_executed && !ran_before; ++i) ran_before = c.executed[i] == plan_desc;
  if (!timed_run && ran_before && c.timed) {
    c.last = mono_ns();  // the winner's first real run: the search ends where it begins
    close_clock();
    return;
  }
  if (!ran_before && c.n_executed < kRemembered) c.executed[c.n_executed++] = plan_desc;
}

// A budgeted plan runs (`e`, with a deferred-search slot): its deferred search when it is due;
// the winner in its place once there is one.
void deferred_run(ThreadState& t, DescEntry& e, void* handle, void** plan, void* pack) {
  Deferred& d = slots()[e.u.plan.deferred - 1];
  if (d.plan != *plan) return;
  uint32_t state = __atomic_load_n(&d.state, __ATOMIC_ACQUIRE);
  // Runs count once the selection is over (its own timing runs are not the job's).
  if ((state == kFilling || state == kWaiting) && t_clock.slot != e.u.plan.deferred && d.n > 0 &&
      ++d.runs >= kDeferRuns) {
    float share = 0, expected = 0;
    if (!over_budget(mono_ns(), &share, &expected) &&
        __atomic_compare_exchange_n(&d.state, &state, kSearching, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      deferred_search(t, d, e, static_cast<cudnnHandle_t>(handle), pack);
      state = kDone;
    }
  }
  if (state == kDone && d.winner != nullptr && d.handle == handle) *plan = d.winner;
}

}  // namespace

void budget_execute(ThreadState& t, void* handle, void** plan, void* pack) {
  bool selecting = t_clock.hash != 0;
  bool deferring = __atomic_load_n(&g_slots_live, __ATOMIC_RELAXED) != 0;
  if (!selecting && !deferring) return;
  DescEntry* e = desc_find(*plan);  // once for both
  clock_run(e, *plan);
  if (deferring && e != nullptr && e->kind == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && e->u.plan.deferred != 0) {
    deferred_run(t, *e, handle, plan, pack);
  }
}

bool budget_destroy_before(void* desc) {
  if (__atomic_load_n(&g_slots_live, __ATOMIC_RELAXED) == 0) return false;
  DescEntry* e = desc_find(desc);
  if (e == nullptr) return false;
  // A configuration a deferred search keeps: the application is done with it, the shim is not.
  if (e->kind == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && e->kept_by_budget) return true;
  if (e->kind != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || e->u.plan.deferred == 0) return false;
  uint16_t slot = e->u.plan.deferred;
  if (t_clock.slot == slot) t_clock.slot = 0;
  release_slot(slot);
  return false;
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
