// Plan pinning: see plan_pins.h. The plan file is the JSON `cuprobe plans export` writes; the
// shim reads only each entry's "pin" string (docs/plan-pinning.md gives its grammar), so that it
// needs no JSON parser and a file reformatted by other tools still works.
#include "plan_pins.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "clock.h"
#include "capture_cudnn_detail.h"
#include "driver_queries.h"
#include "env_config.h"
#include "fork.h"
#include "problem_text.h"
#include "process_info.h"
#include "resolve.h"
#include "plan_pin_text.h"
#include "recorder_internal.h"
#include "safe_files.h"
#include "sys_stat.h"

namespace cuprobe::shim {

bool g_steer_on = false;

namespace {

using pins::Pin;
static_assert(pins::kMaxPinKnobs == kMaxKnobs);
constexpr int kMaxOffered = 96;  // candidates of one selection whose order is remembered

Pin* g_pins;
size_t g_n_pins;
uint64_t g_pin_calls;  // candidates failed fast, and legacy answers given, so far (fault word k)
uint32_t g_gpu_hash[32];
int64_t g_cudnn_version = -1;

// The plan selection a thread is in, for the problem of its latest heuristics query or finalize.
struct Selection {
  uint64_t hash;
  uint32_t problem;
  trace::PinOutcome why;  // when pin is nullptr: why the file's pins do not apply here
  const Pin* pin;
  void* pinned_plan;      // the plan descriptor of the pinned configuration being finalized
  int32_t pinned_pos;     // where heuristics offered the pinned configuration, -1 not offered
  uint16_t n_offered;
  uint8_t built;          // the pinned plan was built: every other candidate fails fast
  uint8_t aside;          // this selection is left alone
  uint8_t reported;
  uint8_t answered;       // the shim answered the selection's heuristics query with the pinned configuration
  uint64_t offered[kMaxOffered];  // plan keys in the order heuristics offered them
};
__thread Selection t_sel __attribute__((tls_model("initial-exec")));

// Not under CUPROBE_QUIET ("print nothing"; `cuprobe record` checks the file itself first).
void complain(const char* path, const char* what) {
  if (g_config.quiet) return;
  fprintf(stderr, "cuprobe: CUPROBE_PIN_PLANS=%s: %s; no plans are pinned\n", path, what);
}

int64_t cudnn_version() {
  int64_t v = __atomic_load_n(&g_cudnn_version, __ATOMIC_RELAXED);
  if (v >= 0) return v;
  using VersionFn = size_t (*)();
  auto fn = reinterpret_cast<VersionFn>(resolve_in_library(trace::Library::kCudnn, "cudnnGetVersion"));
  v = fn ? int64_t(fn()) : 0;
  __atomic_store_n(&g_cudnn_version, v, __ATOMIC_RELAXED);
  return v;
}

uint32_t gpu_hash(int device) {
  if (device < 0 || device >= 32) return 0;
  uint32_t h = __atomic_load_n(&g_gpu_hash[device], __ATOMIC_RELAXED);
  if (h != 0) return h;
  // The driver's name of the device, as in the trace's device record the pin file was made from;
  // never cudaGetDeviceProperties, whose structure is 24 bytes larger under a CUDA 12 runtime.
  char name[256];
  if (!device_name(device, name, int(sizeof name))) return 0;
  h = pins::gpu_name_hash(name);
  __atomic_store_n(&g_gpu_hash[device], h, __ATOMIC_RELAXED);
  return h;
}

// The first pin of a problem (pins are sorted by problem hash), g_n_pins when none.
size_t first_pin(uint64_t hash) {
  size_t lo = 0, hi = g_n_pins;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g_pins[mid].hash < hash) lo = mid + 1;
    else hi = mid;
  }
  return lo < g_n_pins && g_pins[lo].hash == hash ? lo : g_n_pins;
}

bool any_pin(uint64_t hash) { return first_pin(hash) < g_n_pins; }

// The pin that applies to a problem here, or nullptr with *why saying why none does; *listed
// false when the file does not name the problem at all (nothing to say then).
const Pin* find_pin(uint64_t hash, uint32_t align, int device, bool legacy, bool* listed, trace::PinOutcome* why) {
  *listed = false;
  size_t lo = first_pin(hash);
  bool gpu_ok = false, cudnn_ok = false;
  for (size_t i = lo; i < g_n_pins && g_pins[i].hash == hash; ++i) {
    const Pin& p = g_pins[i];
    if (p.legacy != (legacy ? 1 : 0)) continue;
    *listed = true;
    uint32_t g = p.gpu ? gpu_hash(device) : 0;
    if (p.gpu && g && p.gpu != g) continue;
    gpu_ok = true;
    int64_t v = p.cudnn ? cudnn_version() : 0;
    if (p.cudnn && v && p.cudnn != v) continue;
    cudnn_ok = true;
    if (!legacy && p.align && align && p.align != align) continue;
    return &p;
  }
  *why = !gpu_ok ? trace::PinOutcome::kOtherGpu
                 : (!cudnn_ok ? trace::PinOutcome::kOtherCudnn : trace::PinOutcome::kOtherAlignment);
  return nullptr;
}

bool broken(const Pin* p) { return __atomic_load_n(&const_cast<Pin*>(p)->broken, __ATOMIC_RELAXED) != 0; }
void set_broken(const Pin* p) { __atomic_store_n(&const_cast<Pin*>(p)->broken, 1u, __ATOMIC_RELAXED); }
bool filtered(const Pin* p) { return __atomic_load_n(&const_cast<Pin*>(p)->filtered, __ATOMIC_RELAXED) != 0; }

void write_record(ThreadState& t, trace::PinOutcome o, uint32_t problem, uint64_t hash, const Pin* pin,
                  uint32_t knobs, bool legacy) {
  uint32_t flags = (legacy ? trace::kPinLegacy : 0) |
                   (!legacy && t_sel.answered && t_sel.hash == hash ? trace::kPinHeuristicsAnswered : 0);
  write_pin_record(t, o, problem, hash, pin ? pin->engine : -1, knobs, flags, pin ? pin->time_ms : -1,
                   pin ? pin->search_ms : -1);
}

// The selection's outcome, once (a failure of the pinned plan is always written).
void report(ThreadState& t, trace::PinOutcome o, uint32_t knobs = 0) {
  Selection& s = t_sel;
  if (o != trace::PinOutcome::kPinned) s.aside = 1;
  if (s.reported && o != trace::PinOutcome::kPinnedFailed) return;
  s.reported = 1;
  write_record(t, o, s.problem, s.hash, s.pin, knobs, false);
}

void begin_selection(uint64_t hash, uint32_t problem, uint32_t align, int device) {
  Selection& s = t_sel;
  s.hash = hash;
  s.problem = problem;
  bool listed = false;
  s.pin = find_pin(hash, align, device, false, &listed, &s.why);
  s.pinned_plan = nullptr;
  s.pinned_pos = -1;
  s.n_offered = 0;
  s.built = s.aside = s.reported = s.answered = 0;
}

int handle_device(const void* handle) {
  int device = -1;
  const void* stream = nullptr;
  return handle_lookup(handle, &device, &stream) ? device : -1;
}


// ---- answering heuristics queries ----------------------------------------------------------
//
// cuDNN's heuristics query is most of what a pinned selection still costs (it fills every
// configuration it ranks; the first queries of a process also load what the heuristics need), so
// for a pinned problem the shim answers the query itself: one configuration, the pinned engine
// and knobs, built with cuDNN's own backend calls into the application's first descriptor.
// The descriptors the shim makes for it (engine, knob choices) live as long as that
// configuration: they are destroyed after the application destroys it.

// Configurations the shim filled, with the descriptors it made for them. A slot is claimed by
// compare-exchange of `cfg` from null; released by the thread that destroyed the configuration.
constexpr uint32_t kMaxOwned = 4096;
struct Owned {
  void* cfg;
  void* engine;
  void* knobs[kMaxKnobs];
  uint32_t n_knobs;
};
Owned* g_owned;            // kMaxOwned slots, mapped on the first answer: read through owned()
uint32_t g_owned_live;     // slots in use
__thread int32_t t_destroying = -1;  // the slot of the configuration this thread is destroying

// The forking thread's open selection names a problem of the parent's file; the child's selections
// are its own. (The configurations the shim filled stay owned: the application may still destroy
// them in the child.)
void pins_after_fork() {
  t_sel = Selection{};
  t_destroying = -1;
}
CUPROBE_FORK_CHILD_RESET(pins_after_fork);

// Two threads may answer their first query at once: the table pointer is only read atomically.
Owned* owned() { return __atomic_load_n(&g_owned, __ATOMIC_ACQUIRE); }

bool owned_table() {
  if (owned() != nullptr) return true;
  void* mem = mmap(nullptr, kMaxOwned * sizeof(Owned), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  Owned* expected = nullptr;
  if (!__atomic_compare_exchange_n(&g_owned, &expected, static_cast<Owned*>(mem), false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    munmap(mem, kMaxOwned * sizeof(Owned));
  }
  return true;
}

int32_t owned_claim(void* cfg) {
  if (!owned_table()) return -1;
  static uint32_t hint;
  uint32_t start = __atomic_fetch_add(&hint, 1u, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < kMaxOwned; ++i) {
    uint32_t at = (start + i) % kMaxOwned;
    void* expected = nullptr;
    if (__atomic_compare_exchange_n(&owned()[at].cfg, &expected, cfg, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      __atomic_add_fetch(&g_owned_live, 1u, __ATOMIC_RELAXED);
      return int32_t(at);
    }
  }
  return -1;
}

void owned_release(const BackendFns& b, int32_t at) {
  Owned& o = owned()[at];
  if (o.engine) b.destroy(o.engine);
  for (uint32_t i = 0; i < o.n_knobs; ++i) b.destroy(o.knobs[i]);
  o.engine = nullptr;
  o.n_knobs = 0;
  __atomic_sub_fetch(&g_owned_live, 1u, __ATOMIC_RELAXED);
  __atomic_store_n(&o.cfg, static_cast<void*>(nullptr), __ATOMIC_RELEASE);
}

// Says once per process why the shim could not answer a heuristics query itself (cuDNN's own
// heuristics answer then, as without it).
void warn_unanswered(const char* step, int status) {
  static int warned;
  if (g_config.quiet || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  fprintf(stderr,
          "cuprobe: plan pinning: could not build the pinned configuration to answer cuDNN's heuristics query (%s "
          "returned status %d); cuDNN's heuristics answer instead (pinning still applies)\n",
          step, status);
}

// Builds the pin's engine and knobs for `graph` in descriptors of the shim's own, checks that an
// execution plan builds from them (so that an application asking only these heuristics is never
// left without a plan), and only then sets them on the application's configuration `cfg`. False,
// with `cfg` untouched and nothing the shim made left behind, when a step fails before that.
bool fill_config(const Pin& pin, void* graph, void* handle, void* cfg) {
  BackendFns b = backend_fns();
  if (!b.ok() || graph == nullptr || handle == nullptr) return false;
  int32_t at = owned_claim(cfg);
  if (at < 0) return false;
  Owned& o = owned()[at];
  o.engine = nullptr;
  o.n_knobs = 0;
  const char* step = nullptr;
  int status = CUDNN_STATUS_SUCCESS;
  auto ok = [&](const char* what, cudnnStatus_t st) {
    if (step != nullptr) return false;
    if (st == CUDNN_STATUS_SUCCESS) return true;
    step = what;
    status = int(st);
    return false;
  };
  int64_t index = pin.engine;
  if (ok("create engine", b.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &o.engine)) &&
      ok("set engine graph",
         b.set(o.engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph)) &&
      ok("set engine index", b.set(o.engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index))) {
    // An engine cuDNN does not have for this graph is not an error worth a word: it is not offered.
    if (b.finalize(o.engine) != CUDNN_STATUS_SUCCESS) step = "";
  }
  bool compiled = false;
  if (step == nullptr) {
    // Engines compiled at plan build time are left to cuDNN's heuristics: checking the plan here
    // would compile it twice.
    int32_t notes[16];
    int64_t n = 0;
    if (ok("engine behavior query",
           b.get(o.engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 16, &n, notes))) {
      for (int64_t i = 0; i < n && i < 16; ++i) compiled = compiled || notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    }
  }
  for (uint8_t i = 0; step == nullptr && !compiled && i < pin.n_knobs; ++i) {
    void*& k = o.knobs[o.n_knobs];
    if (!ok("create knob choice", b.create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &k))) break;
    o.n_knobs++;
    auto type = cudnnBackendKnobType_t(pin.knob_types[i]);
    int64_t value = pin.knob_values[i];
    ok("set knob type", b.set(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type)) &&
        ok("set knob value", b.set(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value)) &&
        ok("finalize knob choice", b.finalize(k));
  }
  // The check on a configuration of the shim's own, then the application's.
  void* own = nullptr;
  void* plan = nullptr;
  auto set_cfg = [&](void* c) {
    return ok("set configuration engine",
              b.set(c, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o.engine)) &&
           (o.n_knobs == 0 || ok("set configuration knobs", b.set(c, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(o.n_knobs), o.knobs))) &&
           ok("finalize configuration", b.finalize(c));
  };
  bool checked = step == nullptr && !compiled && ok("create configuration", b.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &own)) &&
                 set_cfg(own) && ok("create plan", b.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)) &&
                 ok("set plan handle", b.set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)) &&
                 ok("set plan configuration",
                    b.set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &own));
  // A plan that does not build is the pinned plan failing here: cuDNN's heuristics answer, and
  // the selection steps aside as the application's own build of it fails.
  if (checked && b.finalize(plan) != CUDNN_STATUS_SUCCESS) checked = false;
  if (plan != nullptr) b.destroy(plan);
  if (own != nullptr) b.destroy(own);
  bool done = checked && set_cfg(cfg);
  if (step != nullptr && *step != 0) warn_unanswered(step, status);
  if (!done) owned_release(b, at);
  return done;
}

// The pins of a plan file's text into g_pins; a warning when the shim cannot use the file.
void load_pins(const char* path, const char* text, size_t len) {
  size_t n = 0, bad_at = 0;
  if (!pins::parse_pins(text, len, nullptr, &n, &bad_at)) {
    char what[160];
    snprintf(what, sizeof what, "a \"pin\" string near byte %zu is not one cuprobe plans export writes", bad_at);
    complain(path, what);
    return;
  }
  if (n == 0) {
    complain(path, "no \"pin\" entries (write the file with cuprobe plans export)");
    return;
  }
  void* mem = mmap(nullptr, n * sizeof(Pin), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    complain(path, strerror(errno));
    return;
  }
  g_pins = static_cast<Pin*>(mem);
  pins::parse_pins(text, len, g_pins, &g_n_pins, &bad_at);
  pins::sort_pins(g_pins, g_n_pins);
  // Under a search budget, a pin without a measured time (a heuristic pick: written for a
  // selection the budget or benchmark-off answered) is left to the budget, which searches the
  // problem when it fits; pinning it would keep the heuristic plan for good.
  if (env_value(env::Id::kSearchBudget) != nullptr) {
    size_t kept = 0;
    for (size_t i = 0; i < g_n_pins; ++i) {
      if (g_pins[i].time_ms >= 0) g_pins[kept++] = g_pins[i];
    }
    if (kept < g_n_pins && !g_config.quiet) {
      fprintf(stderr,
              "cuprobe: CUPROBE_PIN_PLANS=%s: %zu of its %zu plans are heuristic picks (no measured time); the search "
              "budget decides those problems\n",
              path, g_n_pins - kept, g_n_pins);
    }
    g_n_pins = kept;
  }
  g_steer_on = true;
}

}  // namespace

void pins_configure() {
  const char* path = env_value(env::Id::kPinPlans);
  if (path == nullptr) return;
  // Read into private memory, never mapped from the file: a plan file rewritten in place while
  // jobs start (cp new.json plans.json) would otherwise kill them with SIGBUS. A file replaced
  // atomically (rename) is read whole, old or new; one that changes while it is read is read
  // again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    files::Why why;
    uint64_t size = 0;
    int fd = files::open_input(path, pins::kMaxPlanFileBytes, &size, &why);
    if (fd < 0) {
      complain(path, why.text);
      return;
    }
    if (size == 0) {
      close(fd);
      complain(path, "the file is empty");
      return;
    }
    void* buf = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
      close(fd);
      complain(path, strerror(errno));
      return;
    }
    struct stat before, after;
    bool whole = fd_status(fd, &before) == 0 && files::read_exact(fd, static_cast<char*>(buf), size) &&
                 fd_status(fd, &after) == 0 && uint64_t(after.st_size) == size &&
                 after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec;
    close(fd);
    if (whole) {
      load_pins(path, static_cast<const char*>(buf), size_t(size));
      munmap(buf, size_t(size));
      return;
    }
    munmap(buf, size_t(size));
  }
  complain(path, "the file kept changing while it was read");
}

void write_pin_property() {
  // Set, even empty: the trace says pinning was asked for (and how many plans it had).
  if (getenv(env::var(env::Id::kPinPlans).name) != nullptr) {
    write_property(trace::Property::kPinnedPlans, int64_t(g_n_pins));
  }
}

bool pin_names(uint64_t hash) { return any_pin(hash); }

void write_pin_record(ThreadState& t, trace::PinOutcome o, uint32_t problem, uint64_t hash, int64_t engine,
                      uint32_t knobs, uint32_t flags, float pinned_ms, float search_ms, float replaced_ms) {
  if (t.chunk == nullptr) return;
  constexpr uint32_t kSize = sizeof(trace::PinRecord);
  char* p = reserve_kept(t, kSize);
  if (p == nullptr) return;
  auto* r = reinterpret_cast<trace::PinRecord*>(p);
  r->h = trace::make_header(trace::RecordType::kPin, kSize);
  r->outcome = uint32_t(o);
  r->problem = problem;
  r->problem_hash = hash;
  r->ticks = now_ticks();
  r->engine = engine;
  r->knobs = knobs;
  r->flags = flags;
  r->pinned_ms = pinned_ms;
  r->search_ms = search_ms;
  r->replaced_ms = replaced_ms;
  r->reserved = 0;
  commit_kept(t, kSize);
}

void pin_mark_call(FaultHit* hit) {
  hit->rule = trace::kPinFaultRule;
  hit->k = __atomic_add_fetch(&g_pin_calls, 1, __ATOMIC_RELAXED);
}

void pin_heuristics_results(ThreadState& t, const DescEntry& heur, int64_t count, void* const* cfgs) {
  ProblemLink link = heur_problem(heur);
  if (link.hash == 0 || !any_pin(link.hash)) return;
  Selection& s = t_sel;
  // A fallback query continues the selection of the query before it (cudnn-frontend's benchmark
  // path asks for both before building any plan; the heuristic path asks for fallbacks when
  // every heuristic candidate failed).
  if (s.hash != link.hash || heur.u.heur.mode != CUDNN_HEUR_MODE_FALLBACK) {
    begin_selection(link.hash, link.id, link.min_alignment, current_device(t));
  }
  if (s.pin == nullptr) return;
  for (int64_t i = 0; i < count && s.n_offered < kMaxOffered; ++i) {
    DescEntry* cfg = desc_find(cfgs[i]);
    if (cfg == nullptr || cfg->kind != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) continue;
    uint64_t key = cfg_key(cfg->u.cfg, cfgs[i]);
    if (key == s.pin->key && s.pinned_pos < 0) s.pinned_pos = s.n_offered;
    s.offered[s.n_offered++] = key;
  }
}

bool pin_heuristics_answer(ThreadState& t, void* heur_desc, void* const* cfgs, FaultHit* hit) {
  DescEntry* heur = desc_find(heur_desc);
  if (heur == nullptr || heur->kind != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR || !heur->finalized ||
      heur->u.heur.mode == CUDNN_HEUR_MODE_FALLBACK) {
    return false;
  }
  ProblemLink link = heur_problem(*heur);
  if (link.hash == 0 || !any_pin(link.hash)) return false;
  begin_selection(link.hash, link.id, link.min_alignment, current_device(t));
  Selection& s = t_sel;
  if (s.pin == nullptr || !s.pin->answerable || broken(s.pin) || filtered(s.pin)) return false;
  DescEntry* cfg = desc_find(cfgs[0]);
  if (cfg == nullptr || cfg->kind != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || cfg->finalized) return false;
  const DescEntry* graph = graph_of_heur(heur);
  if (graph == nullptr || graph->kind != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR ||
      !fill_config(*s.pin, heur->u.heur.graph, graph->u.graph.handle, cfgs[0])) return false;
  cfg->owned_by_pins = 1;
  s.answered = 1;
  s.pinned_pos = 0;
  s.offered[0] = s.pin->key;
  s.n_offered = 1;
  pin_mark_call(hit);
  return true;
}

void pin_destroy_before(void* desc) {
  t_destroying = -1;
  if (__atomic_load_n(&g_owned_live, __ATOMIC_RELAXED) == 0) return;  // no lookup while nothing is owned
  DescEntry* e = desc_find(desc);
  Owned* table = owned();
  if (e == nullptr || !e->owned_by_pins || table == nullptr) return;
  for (uint32_t i = 0; i < kMaxOwned; ++i) {
    if (__atomic_load_n(&table[i].cfg, __ATOMIC_ACQUIRE) == desc) {
      t_destroying = int32_t(i);
      return;
    }
  }
}

void pin_destroy_after(int status) {
  int32_t at = t_destroying;
  t_destroying = -1;
  if (at >= 0 && status == CUDNN_STATUS_SUCCESS) owned_release(backend_fns(), at);
}

bool pin_finalize_before(ThreadState& t, void* plan_desc, int* code, FaultHit* hit) {
  DescEntry* e = desc_find(plan_desc);
  if (e == nullptr || e->kind != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) return false;
  EngineCfgState* cfg = plan_cfg(e->u.plan);
  if (cfg == nullptr || cfg->problem.hash == 0 || !any_pin(cfg->problem.hash)) return false;
  Selection& s = t_sel;
  if (s.hash != cfg->problem.hash) {
    // Plans built with no heuristics query seen on this thread: nothing says where the pinned
    // configuration stands, so the selection is left alone (below).
    begin_selection(cfg->problem.hash, cfg->problem.id, cfg->problem.min_alignment, handle_device(e->u.plan.handle));
  }
  if (s.pin == nullptr) {
    report(t, s.why);
    return false;
  }
  if (s.aside) return false;
  if (broken(s.pin)) {
    report(t, trace::PinOutcome::kBroken);
    return false;
  }
  if (filtered(s.pin)) {
    report(t, trace::PinOutcome::kSkipped);
    return false;
  }
  uint64_t key = cfg_key(*cfg, e->u.plan.cfg);
  if (key != 0 && key == s.pin->key) {
    s.pinned_plan = plan_desc;
    return false;
  }
  if (!s.built) {
    if (s.pinned_pos < 0) {
      report(t, trace::PinOutcome::kNotOffered);
      return false;
    }
    int pos = -1;
    for (int i = 0; i < s.n_offered && pos < 0; ++i) pos = s.offered[i] == key ? i : -1;
    if (pos > s.pinned_pos) {  // the application passed the pinned configuration by
      // Its filters rejected the pinned configuration (determinism or TF32 settings changed since
      // the file was written): later selections of the problem are left alone from the start.
      __atomic_store_n(&const_cast<Pin*>(s.pin)->filtered, 1u, __ATOMIC_RELAXED);
      report(t, trace::PinOutcome::kSkipped);
      return false;
    }
    if (pos < 0) return false;  // not a configuration heuristics offered: where it stands is unknown
  }
  *code = CUDNN_STATUS_NOT_SUPPORTED;
  pin_mark_call(hit);
  return true;
}

void pin_finalize_after(ThreadState& t, void* plan_desc, int status) {
  Selection& s = t_sel;
  if (s.pinned_plan != plan_desc || plan_desc == nullptr) return;
  s.pinned_plan = nullptr;
  if (status == CUDNN_STATUS_SUCCESS) {
    s.built = 1;
    DescEntry* e = desc_find(plan_desc);
    report(t, trace::PinOutcome::kPinned, e ? e->u.plan.knobs_id : 0);
  } else {
    set_broken(s.pin);
    report(t, trace::PinOutcome::kPinnedFailed);
  }
}

void pin_execute_after(ThreadState& t, void* plan_desc, int status) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  DescEntry* e = desc_find(plan_desc);
  if (e == nullptr || e->kind != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !any_pin(e->u.plan.problem_hash)) return;
  EngineCfgState* cfg = plan_cfg(e->u.plan);
  if (cfg == nullptr) return;
  bool listed = false;
  trace::PinOutcome why;
  const Pin* p = find_pin(e->u.plan.problem_hash, uint32_t(e->u.plan.min_alignment), handle_device(e->u.plan.handle),
                          false, &listed, &why);
  if (p == nullptr || broken(p) || cfg_key(*cfg, e->u.plan.cfg) != p->key) return;
  set_broken(p);
  write_record(t, trace::PinOutcome::kPinnedFailed, e->u.plan.problem_id, e->u.plan.problem_hash, p, e->u.plan.knobs_id,
               false);
}

bool pin_legacy(ThreadState& t, uint32_t problem, uint64_t hash, const void* handle, LegacyPin* out) {
  if (hash == 0 || !any_pin(hash)) return false;
  bool listed = false;
  trace::PinOutcome why = trace::PinOutcome::kNotOffered;
  const Pin* p = find_pin(hash, 0, handle_device(handle), true, &listed, &why);
  if (!listed) return false;
  if (p != nullptr && broken(p)) {
    why = trace::PinOutcome::kBroken;
    p = nullptr;
  }
  if (p == nullptr) {
    write_record(t, why, problem, hash, nullptr, 0, true);
    return false;
  }
  *out = LegacyPin{int32_t(p->engine), p->math, p->determinism, p->time_ms};
  return true;
}

void pin_legacy_done(ThreadState& t, uint32_t problem, uint64_t hash, bool pinned) {
  bool listed = false;
  trace::PinOutcome why;
  const Pin* p = find_pin(hash, 0, -1, true, &listed, &why);
  write_record(t, pinned ? trace::PinOutcome::kPinned : trace::PinOutcome::kNotOffered, problem, hash, p, 0, true);
}

void pin_legacy_failed(ThreadState& t, uint32_t problem, uint64_t hash) {
  bool listed = false;
  trace::PinOutcome why;
  if (const Pin* p = find_pin(hash, 0, -1, true, &listed, &why)) set_broken(p);
  write_record(t, trace::PinOutcome::kPinnedFailed, problem, hash, nullptr, 0, true);
}

}  // namespace cuprobe::shim
