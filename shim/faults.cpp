// Fault mode: see faults.h.
#include "faults.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "env_config.h"
#include "fault_plan.h"
#include "fork.h"
#include "lock_order.h"
#include "problem_text.h"
#include "problem_table.h"
#include "process_info.h"
#include "resolve.h"

namespace cuprobe::shim {

// Driver calls are given the plan's CUDA runtime codes: for every error a plan can name, the
// driver's code is the same number.
static_assert(int(CUDA_ERROR_OUT_OF_MEMORY) == int(cudaErrorMemoryAllocation));
static_assert(int(CUDA_ERROR_NOT_SUPPORTED) == int(cudaErrorNotSupported));
static_assert(int(CUDA_ERROR_INVALID_VALUE) == int(cudaErrorInvalidValue));
static_assert(int(CUDA_ERROR_UNKNOWN) == int(cudaErrorUnknown));
static_assert(int(CUDA_ERROR_LAUNCH_FAILED) == int(cudaErrorLaunchFailure));
static_assert(int(CUDA_ERROR_NOT_INITIALIZED) == int(cudaErrorInitializationError));

bool g_faults_on = false;
bool g_cap_on = false;
bool g_sticky_on = false;

namespace {

using faults::kMemCapRule;
using faults::kRuleSlots;

faults::Plan g_plan;
faults::MemCap g_cap;
char g_cap_text[256];
// Sticky faults (issue 32): per device, the rule whose error corrupted the context (its index + 1;
// 0: none) and the runtime error it left, which every later faultable call there returns, as a
// real illegal address or ECC error makes the runtime do.
int g_sticky_rule[faults::kCapDevices];
int32_t g_sticky_code[faults::kCapDevices];
bool g_rule_recorded[faults::kMaxRules];  // its FaultRule record is in the trace (faults_rank_known)
bool g_rule_live[faults::kMaxRules];  // the rule's process filters (rank, pid, comm) hold here
uint64_t g_k[kRuleSlots];             // matches per rule, scope=process
uint64_t g_fired[kRuleSlots];         // injections per rule (for max=)
uint64_t g_local_matched[kRuleSlots]; // before the trace file exists
uint64_t g_local_injected[kRuleSlots];
__thread uint64_t t_k[kRuleSlots] __attribute__((tls_model("initial-exec")));

// Which problem-text rules each interned problem matches: bit r for rule r, bit 63 "evaluated".
constexpr size_t kSidSlots = size_t(1) << 16;  // problem ids (problem_table.cpp holds fewer)
uint64_t* g_sid_rules;

// The memory cap's view: live bytes per device, and each live allocation's size.
uint64_t g_live[faults::kCapDevices];
uint64_t g_total[faults::kCapDevices];  // the device's real total memory, learned once
struct Allocation {
  uintptr_t ptr;  // 0 empty, 1 deleted
  uint64_t size;
  int64_t device;
};
constexpr size_t kAllocSlots = size_t(1) << 20;
Allocation* g_allocs;  // under the cap table's lock (lock_order.h)

void* map_zeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

size_t read_small(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) n = 0;
  buf[n] = 0;
  return size_t(n);
}

const char* base_name(const char* s) {
  const char* slash = strrchr(s, '/');
  return slash ? slash + 1 : s;
}

// comm= matches the kernel's command name, the executable's name, or the name of the script
// the interpreter runs (the first few command-line arguments).
bool comm_matches(const char* want) {
  char buf[4096];
  read_small("/proc/self/comm", buf, sizeof buf);
  buf[strcspn(buf, "\n")] = 0;
  if (strcmp(buf, want) == 0) return true;
  size_t n = read_small("/proc/self/cmdline", buf, sizeof buf);
  const char* p = buf;
  for (int arg = 0; arg < 3 && p < buf + n; ++arg, p += strlen(p) + 1)
    if (strcmp(base_name(p), want) == 0) return true;
  return false;
}

bool process_filters_hold(const faults::Rule& r) {
  if (r.pid > 0 && r.pid != int64_t(getpid())) return false;
  if (r.rank != -1) {
    // The launcher's rank, else the NCCL communicator's once one is set up (faults_rank_known).
    int rank = -1, world = -1;
    job_rank(&rank, &world);
    int want = r.rank == faults::kRankRandom ? faults::random_rank(r.seed, world) : r.rank;
    if (want < 0 || rank != want) return false;
  }
  if (r.comm[0] && !comm_matches(r.comm)) return false;
  return true;
}

void complain(const char* what, const char* err) {
  fprintf(stderr, "cuprobe: %s not used, nothing will be injected: %s\n", what, err);
  count_stat(trace::kStatFaultPlanRejected);
}

void add_counter(uint64_t* hdr_counters, uint64_t* local, int slot) {
  __atomic_fetch_add(hdr_counters ? &hdr_counters[slot] : &local[slot], 1, __ATOMIC_RELAXED);
}

bool take_slot(int r, uint64_t max) {
  uint64_t cur = __atomic_load_n(&g_fired[r], __ATOMIC_RELAXED);
  do {
    if (cur >= max) return false;
  } while (!__atomic_compare_exchange_n(&g_fired[r], &cur, cur + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return true;
}

bool sid_matches(uint32_t sid, int r) {
  if (sid == 0 || g_sid_rules == nullptr || sid >= kSidSlots) return false;
  uint64_t m = __atomic_load_n(&g_sid_rules[sid], __ATOMIC_ACQUIRE);
  return (m >> r) & 1;
}

uint64_t device_total(int d, void* = nullptr) {
  uint64_t t = __atomic_load_n(&g_total[d], __ATOMIC_RELAXED);
  if (t != 0) return t;
  using MemGetInfoFn = cudaError_t (*)(size_t*, size_t*);
  // The driver first (same signature, same success code): a driver allocation under a cap may be
  // made from inside the runtime, which must not be called back then (driver_hooks.h). Before any
  // context exists the driver has no answer, and the runtime's call makes the context.
  size_t free_b = 0, total_b = 0;
  auto driver = reinterpret_cast<MemGetInfoFn>(real_function(ApiId::cuMemGetInfo_v2));
  auto runtime = reinterpret_cast<MemGetInfoFn>(real_function(ApiId::cudaMemGetInfo));
  bool ok = driver != nullptr && driver(&free_b, &total_b) == cudaSuccess;
  if (!ok) ok = runtime != nullptr && runtime(&free_b, &total_b) == cudaSuccess;
  if (ok) {
    t = total_b;
    __atomic_store_n(&g_total[d], t, __ATOMIC_RELAXED);
  }
  return t;
}

uint64_t cap_bytes(int d) { return faults::cap_bytes(g_cap, d, device_total, nullptr); }

size_t alloc_slot(uintptr_t p) { return size_t((p >> 8) * 0x9e3779b97f4a7c15ull >> 44) & (kAllocSlots - 1); }

}  // namespace

void faults_configure() {
  char err[768];
  if (const char* plan = env_value(env::Id::kFaults)) {
    if (!faults::parse_plan(plan, &g_plan, err, sizeof err)) {
      complain("the fault plan (CUPROBE_FAULTS)", err);
      env_not_taken(env::Id::kFaults);  // said once for the job, not by each program it runs
    } else if (g_plan.n > 0) {
      for (int r = 0; r < g_plan.n; ++r) g_rule_live[r] = process_filters_hold(g_plan.rules[r]);
      if (g_plan.uses_problem_text) {
        g_sid_rules = static_cast<uint64_t*>(map_zeroed(kSidSlots * sizeof(uint64_t)));
        set_new_problem_hook(faults_on_new_problem);
      }
      g_faults_on = true;
    }
  }
  if (const char* cap = env_value(env::Id::kMemCap)) {
    if (!faults::parse_mem_cap(cap, &g_cap, err, sizeof err)) {
      complain("the memory cap (CUPROBE_MEM_CAP)", err);
      env_not_taken(env::Id::kMemCap);
    } else if ((g_allocs = static_cast<Allocation*>(map_zeroed(kAllocSlots * sizeof(Allocation)))) != nullptr) {
      snprintf(g_cap_text, sizeof g_cap_text, "%s", cap);
      g_cap_on = true;
      g_faults_on = true;
    }
  }
}

namespace {

// A forked child counts its own calls from zero, and its memory cap weighs its own allocations:
// the parent's live ones belong to the parent's CUDA context, which the child cannot use.
void faults_after_fork() {
  memset(g_k, 0, sizeof g_k);
  memset(g_fired, 0, sizeof g_fired);
  memset(g_local_matched, 0, sizeof g_local_matched);
  memset(g_local_injected, 0, sizeof g_local_injected);
  memset(t_k, 0, sizeof t_k);
  // Problem ids start again in the child's trace.
  if (g_sid_rules != nullptr) {
    munmap(g_sid_rules, kSidSlots * sizeof(uint64_t));
    g_sid_rules = static_cast<uint64_t*>(map_zeroed(kSidSlots * sizeof(uint64_t)));
  }
  memset(g_live, 0, sizeof g_live);
  memset(g_rule_recorded, 0, sizeof g_rule_recorded);  // the child's trace is new
  memset(g_sticky_rule, 0, sizeof g_sticky_rule);
  memset(g_sticky_code, 0, sizeof g_sticky_code);
  g_sticky_on = false;
  if (g_allocs != nullptr) {
    munmap(g_allocs, kAllocSlots * sizeof(Allocation));
    g_allocs = static_cast<Allocation*>(map_zeroed(kAllocSlots * sizeof(Allocation)));
    if (g_allocs == nullptr) g_cap_on = false;
  }
  for (int r = 0; r < g_plan.n; ++r) g_rule_live[r] = process_filters_hold(g_plan.rules[r]);
}
CUPROBE_FORK_CHILD_RESET(faults_after_fork);

}  // namespace

namespace {

void write_rule_record(uint32_t index, uint32_t scope, const char* name, const char* text) {
  size_t nl = strlen(name), tl = strlen(text);
  uint32_t size = trace::align8(uint32_t(sizeof(trace::FaultRuleRecord) + nl + tl));
  MetaWriter w;
  if (char* p = w.reserve(size)) {
    auto* r = reinterpret_cast<trace::FaultRuleRecord*>(p);
    r->h = trace::make_header(trace::RecordType::kFaultRule, size);
    r->index = index;
    r->scope = scope;
    r->name_len = uint32_t(nl);
    r->text_len = uint32_t(tl);
    memcpy(r->text, name, nl);
    memcpy(r->text + nl, text, tl);
    w.commit(size);
  }
}

}  // namespace

void faults_rank_known() {
  for (int r = 0; r < g_plan.n; ++r) {
    const faults::Rule& rule = g_plan.rules[r];
    if (rule.rank == -1) continue;
    // Both ways: a point-to-point pair's communicator set up before the world's gave a rank that
    // the world's (larger, so it counts) replaces.
    bool live = process_filters_hold(rule);
    bool was = __atomic_load_n(&g_rule_live[r], __ATOMIC_ACQUIRE);
    if (live && !was && !__atomic_load_n(&g_rule_recorded[r], __ATOMIC_ACQUIRE)) {
      // Its record first, so that a trace with an injection by it names the rule.
      write_rule_record(uint32_t(r), rule.scope, rule.name, rule.text);
      __atomic_store_n(&g_rule_recorded[r], true, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&g_rule_live[r], live, __ATOMIC_RELEASE);
  }
}

void write_fault_records() {
  trace::FileHeader* hdr = trace_header();
  for (int r = 0; r < g_plan.n; ++r) {
    if (!__atomic_load_n(&g_rule_live[r], __ATOMIC_ACQUIRE)) continue;
    write_rule_record(uint32_t(r), g_plan.rules[r].scope, g_plan.rules[r].name, g_plan.rules[r].text);
    __atomic_store_n(&g_rule_recorded[r], true, __ATOMIC_RELEASE);
  }
  if (g_cap_on) write_rule_record(uint32_t(kMemCapRule), faults::kScopeProcess, "mem-cap", g_cap_text);
  if (hdr != nullptr) {
    for (int r = 0; r < kRuleSlots; ++r) {
      __atomic_fetch_add(&hdr->fault_matched[r], __atomic_exchange_n(&g_local_matched[r], 0, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
      __atomic_fetch_add(&hdr->fault_injected[r], __atomic_exchange_n(&g_local_injected[r], 0, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
    }
  }
}

const char* fault_rule_name(int rule) {
  if (rule == kMemCapRule) return "mem-cap";
  if (rule < 0 || rule >= g_plan.n) return "?";
  return g_plan.rules[rule].name[0] ? g_plan.rules[rule].name : "unnamed";
}

void faults_on_new_problem(uint32_t id, const trace::ProblemDesc& d) {
  if (g_sid_rules == nullptr || id >= kSidSlots) return;
  char buf[4096];
  size_t len = render_problem(d, buf, sizeof buf);
  if (len >= sizeof buf) len = sizeof buf - 1;
  uint64_t mask = 1ull << 63;
  for (int r = 0; r < g_plan.n; ++r) {
    const faults::Rule& rule = g_plan.rules[r];
    bool hit = false;
    if (rule.problem_kind == faults::kProblemSubstring) hit = strstr(buf, rule.problem) != nullptr;
    else if (rule.problem_kind == faults::kProblemRegex) hit = safe_regex::search(rule.problem_re, buf, len);
    if (hit) mask |= 1ull << r;
  }
  __atomic_store_n(&g_sid_rules[id], mask, __ATOMIC_RELEASE);
}

namespace {

// What a call of `lib` returns in a context a runtime error `code` corrupted: the code itself for
// runtime calls and for driver calls where the driver has it (700 is both cudaErrorIllegalAddress
// and CUDA_ERROR_ILLEGAL_ADDRESS), else the driver's CUDA_ERROR_UNKNOWN; cuDNN's
// CUDNN_STATUS_EXECUTION_FAILED_CUDART; NCCL's ncclUnhandledCudaError.
int32_t sticky_code_for(trace::Library lib, int32_t code) {
  switch (lib) {
    case trace::Library::kCudnn:
      return 5003;
    case trace::Library::kNccl:
      return 1;
    case trace::Library::kDriver:
      return faults::error_name(lib, code) != nullptr ? code : 999;
    default:
      return code;
  }
}

}  // namespace

void fault_delay(const FaultHit& hit) {
  if (hit.delay_ns == 0) return;
  struct timespec left = {time_t(hit.delay_ns / 1000000000ull), long(hit.delay_ns % 1000000000ull)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

int32_t sticky_error(int device) {
  if (!__atomic_load_n(&g_sticky_on, __ATOMIC_ACQUIRE) || device < 0 || device >= faults::kCapDevices) return 0;
  return __atomic_load_n(&g_sticky_code[device], __ATOMIC_ACQUIRE);
}

bool fault_decide(ApiId api, trace::Library lib, const FaultCtx& c, FaultHit* hit) {
  trace::FileHeader* hdr = trace_header();
  uint64_t* matched = hdr ? hdr->fault_matched : nullptr;
  uint64_t* injected = hdr ? hdr->fault_injected : nullptr;
  int a = int(api);
  if (int32_t code = sticky_error(c.device)) {
    // A corrupted context: the call fails as the sticky rule's, counted as its injection.
    int r = __atomic_load_n(&g_sticky_rule[c.device], __ATOMIC_ACQUIRE) - 1;
    add_counter(matched, g_local_matched, r);
    add_counter(injected, g_local_injected, r);
    hit->rule = r;
    hit->k = __atomic_add_fetch(&g_k[r], 1, __ATOMIC_RELAXED);
    hit->code = sticky_code_for(lib, code);
    return true;
  }
  int comm_size = c.comm_size;  // a collective's communicator's: asked at most once, and only if a rule needs it
  for (int r = 0; r < g_plan.n; ++r) {
    const faults::Rule& rule = g_plan.rules[r];
    if (!__atomic_load_n(&g_rule_live[r], __ATOMIC_ACQUIRE) || !((rule.apis[a / 64] >> (a % 64)) & 1)) continue;
    if (rule.min_size && c.size < rule.min_size) continue;
    if (rule.device >= 0 && c.device != rule.device) continue;
    if (rule.engine >= 0 && c.engine != rule.engine) continue;
    if (rule.problem_kind == faults::kProblemHash) {
      if (c.problem_hash != rule.problem_hash) continue;
    } else if (rule.problem_kind != faults::kProblemAny && !sid_matches(c.problem_id, r)) {
      continue;
    }
    if (rule.comm_size != 0) {
      if (comm_size < 0 && c.comm != 0) comm_size = nccl_comm_size(reinterpret_cast<const void*>(uintptr_t(c.comm)));
      if (comm_size != rule.comm_size) continue;
    }
    if (rule.from_ns || rule.until_ns) {
      uint64_t since = mono_ns() - process_start_mono_ns();
      if (since < rule.from_ns || (rule.until_ns && since >= rule.until_ns)) continue;
    }
    uint64_t k = rule.scope == faults::kScopeThread ? ++t_k[r] : __atomic_add_fetch(&g_k[r], 1, __ATOMIC_RELAXED);
    add_counter(matched, g_local_matched, r);
    if (!faults::triggers_fire(rule, r, k)) continue;
    if (rule.max && !take_slot(r, rule.max)) continue;
    add_counter(injected, g_local_injected, r);
    hit->rule = r;
    hit->k = k;
    hit->code = lib == trace::Library::kCudnn    ? rule.cudnn_code
                : lib == trace::Library::kDriver ? rule.driver_code
                : lib == trace::Library::kNccl   ? rule.nccl_code
                                                 : rule.cudart_code;
    hit->delay_ns = rule.delay_ns;
    if (rule.delay_only) {
      // DELAY: the call waits, then runs as usual, so the memory cap still weighs it below (a
      // delayed allocation once went past the cap); a refusal keeps the wait.
      hit->code = 0;
      break;
    }
    if (rule.sticky && c.device >= 0 && c.device < faults::kCapDevices) {
      int32_t runtime = rule.cudart_code != 0 ? rule.cudart_code : rule.driver_code;
      int unset = 0;
      if (__atomic_compare_exchange_n(&g_sticky_rule[c.device], &unset, r + 1, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&g_sticky_code[c.device], runtime, __ATOMIC_RELEASE);
        __atomic_store_n(&g_sticky_on, true, __ATOMIC_RELEASE);
      }
    }
    return true;
  }
  const bool delayed = hit->rule >= 0;
  if (!c.cap_checked || !g_cap_on) return delayed;
  uint64_t cap = cap_bytes(c.device);
  if (cap == 0) return delayed;
  uint64_t k = __atomic_add_fetch(&g_k[kMemCapRule], 1, __ATOMIC_RELAXED);
  add_counter(matched, g_local_matched, kMemCapRule);
  uint64_t live = __atomic_add_fetch(&g_live[c.device], c.size, __ATOMIC_RELAXED);
  if (live > cap) {
    __atomic_sub_fetch(&g_live[c.device], c.size, __ATOMIC_RELAXED);
    add_counter(injected, g_local_injected, kMemCapRule);
    hit->rule = kMemCapRule;
    hit->k = k;
    hit->code = lib == trace::Library::kCudnn ? 4004 : int32_t(cudaErrorMemoryAllocation);
    return true;
  }
  hit->cap_device = c.device;
  return delayed;
}

void cap_settle(const FaultHit& hit, uint64_t size, bool ok, const void* ptr) {
  int d = hit.cap_device;
  if (d < 0) return;
  if (!ok || ptr == nullptr) {
    __atomic_sub_fetch(&g_live[d], size, __ATOMIC_RELAXED);
    return;
  }
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  shim_lock(LockRank::kCapTable);
  size_t i = alloc_slot(p);
  size_t probes = 0;
  while (g_allocs[i].ptr > 1 && g_allocs[i].ptr != p && probes < kAllocSlots) {
    i = (i + 1) & (kAllocSlots - 1);
    ++probes;
  }
  if (probes < kAllocSlots) {
    if (g_allocs[i].ptr == p) __atomic_sub_fetch(&g_live[g_allocs[i].device], g_allocs[i].size, __ATOMIC_RELAXED);
    g_allocs[i] = Allocation{p, size, d};
  } else {
    count_stat(trace::kStatCapTableFull);
  }
  shim_unlock(LockRank::kCapTable);
}

void cap_note_free(const void* ptr) {
  if (ptr == nullptr) return;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  shim_lock(LockRank::kCapTable);
  size_t i = alloc_slot(p);
  for (size_t probes = 0; probes < kAllocSlots && g_allocs[i].ptr != 0; ++probes, i = (i + 1) & (kAllocSlots - 1)) {
    if (g_allocs[i].ptr != p) continue;
    __atomic_sub_fetch(&g_live[g_allocs[i].device], g_allocs[i].size, __ATOMIC_RELAXED);
    g_allocs[i].ptr = 1;
    break;
  }
  shim_unlock(LockRank::kCapTable);
}

void cap_adjust_meminfo(int device, size_t* free_bytes, size_t* total) {
  uint64_t cap = cap_bytes(device);
  if (cap == 0) return;
  uint64_t live = __atomic_load_n(&g_live[device], __ATOMIC_RELAXED);
  uint64_t avail = cap > live ? cap - live : 0;
  if (total) *total = cap;
  if (free_bytes && *free_bytes > avail) *free_bytes = avail;
}

}  // namespace cuprobe::shim
