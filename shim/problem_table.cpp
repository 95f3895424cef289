// Problem and knob-set interning; see problem_table.h. Records are written only on a thread that
// is set up with a chunk (always so inside a hooked call; unit tests intern without a trace).
#include "problem_table.h"

#include "alerts.h"
#include "fork.h"
#include "search_budget.h"

#include <string.h>
#include <sys/mman.h>

namespace cuprobe::shim {

namespace {

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// One content-addressed table: Slots find entries by hash; entries (kEntry bytes each, by id)
// hold the content compared on a hit.
struct Slot {
  uint64_t hash;  // 0: empty
  uint32_t id;    // 0: being filled
  uint32_t pad;
};

template <uint32_t kSlots, uint32_t kEntries, uint32_t kEntry>
class Table {
 public:
  // Returns the id of `content` (len <= kEntry bytes), interning it with `write(id)` when new.
  template <typename Write>
  uint32_t intern(uint64_t hash, const void* content, uint32_t len, Write write) {
    if (!ready()) return 0;
    if (hash == 0) hash = 1;
    uint32_t slot = uint32_t(hash % kSlots);
    for (uint32_t probe = 0; probe < kSlots; ++probe, slot = (slot + 1) % kSlots) {
      Slot& s = base()[slot];
      uint64_t h = __atomic_load_n(&s.hash, __ATOMIC_ACQUIRE);
      if (h == 0) {
        uint64_t expected = 0;
        if (!__atomic_compare_exchange_n(&s.hash, &expected, hash, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          h = expected;  // taken meanwhile: look at what it holds
        } else {
          uint32_t id = __atomic_add_fetch(&next_id_, 1, __ATOMIC_RELAXED);
          if (id > kEntries) {
            __atomic_store_n(&s.id, UINT32_MAX, __ATOMIC_RELEASE);  // full: never matches
            return 0;
          }
          memcpy(entry(id), content, len);
          write(id);
          __atomic_store_n(&s.id, id, __ATOMIC_RELEASE);
          return id;
        }
      }
      if (h != hash) continue;
      uint32_t id;
      for (int spin = 0; (id = __atomic_load_n(&s.id, __ATOMIC_ACQUIRE)) == 0; ++spin) {
        if (spin > 1000000) break;  // the filling thread died (a fork mid-insert): look further
        relax();
      }
      if (id != 0 && id <= kEntries && memcmp(entry(id), content, len) == 0) return id;
    }
    return 0;
  }

  const void* get(uint32_t id) const {
    return base() != nullptr && id != 0 && id <= kEntries && id <= __atomic_load_n(&next_id_, __ATOMIC_ACQUIRE)
               ? entry(id)
               : nullptr;
  }

  void reset() {
    if (Slot* s = base()) memset(s, 0, sizeof(Slot) * kSlots);
    __atomic_store_n(&next_id_, 0, __ATOMIC_RELAXED);
  }

 private:
  bool ready() {
    void* s = __atomic_load_n(&slots_, __ATOMIC_ACQUIRE);
    if (s != nullptr) return true;
    size_t bytes = sizeof(Slot) * kSlots + size_t(kEntries) * kEntry;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    Slot* expected = nullptr;
    if (!__atomic_compare_exchange_n(&slots_, &expected, static_cast<Slot*>(p), false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
      munmap(p, bytes);  // another thread mapped it first
    }
    return true;
  }
  // slots_ is set once by whichever thread maps the table first; every read is atomic, since
  // another thread may still be trying its own compare-exchange on it.
  Slot* base() const { return __atomic_load_n(&slots_, __ATOMIC_ACQUIRE); }
  char* entry(uint32_t id) const {
    return reinterpret_cast<char*>(base()) + sizeof(Slot) * kSlots + size_t(id - 1) * kEntry;
  }

  Slot* slots_ = nullptr;
  uint32_t next_id_ = 0;
};

// Distinct problems of a process: a ResNet-50 benchmark run has a few hundred, a dynamic-shape
// job a few per input size.
Table<1u << 16, 1u << 15, sizeof(trace::ProblemDesc)> g_problems;
struct KnobEntry {
  uint32_t n;
  uint32_t pad;
  trace::Knob knobs[trace::kMaxKnobsPerSet];
};
Table<1u << 15, 1u << 14, sizeof(KnobEntry)> g_knobs;
NewProblemHook g_new_problem_hook;

}  // namespace

uint32_t intern_problem(ThreadState& t, const trace::ProblemDesc& d, uint64_t* hash) {
  uint64_t h = trace::problem_hash(d);
  *hash = h;
  // math_type is recorded but is not part of the problem: the slot hash covers it too, so that a
  // problem seen with two math types is two entries of one problem hash.
  uint64_t slot_hash = (h ^ uint64_t(uint8_t(d.math_type))) * 1099511628211ull;
  return g_problems.intern(slot_hash, &d, sizeof d, [&](uint32_t id) {
    uint32_t packed = trace::packed_problem_size(d);
    uint32_t size = trace::align8(uint32_t(sizeof(trace::ProblemRecordHead)) + packed);
    if (char* p = t.chunk != nullptr ? reserve_kept(t, size) : nullptr) {
      auto* r = reinterpret_cast<trace::ProblemRecordHead*>(p);
      r->h = trace::make_header(trace::RecordType::kProblem, size);
      r->id = id;
      r->pad = 0;
      r->hash = h;
      trace::pack_problem(d, p + sizeof *r);
      memset(p + sizeof *r + packed, 0, size - sizeof *r - packed);
      commit_kept(t, size);
    }
    if (g_new_problem_hook) g_new_problem_hook(id, d);
    alert_new_problem();
    budget_new_problem(d);
  });
}

uint64_t problem_hash_of(uint32_t id) {
  const void* e = g_problems.get(id);
  return e ? trace::problem_hash(*static_cast<const trace::ProblemDesc*>(e)) : 0;
}

uint32_t intern_knobs(ThreadState& t, const trace::Knob* knobs, int n) {
  if (n <= 0) return 0;
  KnobEntry e{};
  e.n = uint32_t(n < trace::kMaxKnobsPerSet ? n : trace::kMaxKnobsPerSet);
  memcpy(e.knobs, knobs, e.n * sizeof(trace::Knob));
  trace::ProblemHasher x;
  for (uint32_t i = 0; i < e.n; ++i) {
    x.add(e.knobs[i].type);
    x.add(e.knobs[i].value);
  }
  return g_knobs.intern(x.h, &e, sizeof e, [&](uint32_t id) {
    uint32_t size = uint32_t(sizeof(trace::KnobsRecord) + e.n * sizeof(trace::Knob));
    if (char* p = t.chunk != nullptr ? reserve_kept(t, size) : nullptr) {
      auto* r = reinterpret_cast<trace::KnobsRecord*>(p);
      r->h = trace::make_header(trace::RecordType::kKnobs, size);
      r->id = id;
      r->n = e.n;
      memcpy(r->knobs, e.knobs, e.n * sizeof(trace::Knob));
      commit_kept(t, size);
    }
  });
}

namespace {

// A forked child writes a trace file of its own: nothing of the parent's is in it yet.
void problems_after_fork() {
  g_problems.reset();
  g_knobs.reset();
}
CUPROBE_FORK_CHILD_RESET(problems_after_fork);

}  // namespace

void set_new_problem_hook(NewProblemHook hook) { g_new_problem_hook = hook; }

}  // namespace cuprobe::shim
