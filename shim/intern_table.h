// A table that gives each distinct key (a string of bytes) a small id, for things written into the
// trace once and referred to by id afterwards: interned strings (recorder_meta.cpp) and stacks
// (stacks.cpp). Keys are compared by content: the caller's 64-bit hash only picks the slot, a hit
// needs the same hash, length and bytes, so two keys whose hashes collide get two ids.
//
// Contract:
// - No allocation, ever: kSlots slots of 8 bytes and an arena of kArenaBytes that holds each key
//   once, both in static storage (zero-initialized: .bss, pages touched only as they fill).
// - find() never locks, never waits and never writes: any thread, at any time, also while others
//   insert. A hit costs one slot load (acquire), a 16-byte entry header and one memcmp of the key,
//   besides the caller's hash.
// - intern() is lock-free as well: the key is copied into the arena, `on_new(id)` runs, then one
//   compare-and-swap publishes the slot. So no thread can see the id before on_new has run (the
//   record that defines it is written, whatever else on_new does is done). Callers that insert
//   under a mutex of their own (strings, stacks) never race; if two threads insert the same new key
//   at once without one, both run on_new, each with its own id, and both get the id that won:
//   the loser's id stays unused (ids are unique, not necessarily dense) and its record, if on_new
//   wrote one, is never referred to.
// - When a key cannot be remembered (kMaxProbes slots looked at, or the arena full), intern()
//   still runs on_new with a fresh id and returns it with `remembered` false: the next intern of
//   that key writes it again under another id. Callers may count this.
// - reset() forgets everything and starts ids at 1 again; only where no other thread can use the
//   table (a forked child, which writes a trace of its own).
//
// Using it for another kind of record (cuDNN problems, knob sets, ...):
//   1. Make the key the bytes that identify the record, fixed-layout with padding zeroed, so that
//      equal records have equal bytes (a value-initialized struct, or a packed buffer built field
//      by field; variable-length keys are fine).
//   2. Hash those bytes, e.g. fnv1a64(&key, len) below; the hash need not be good, only stable.
//   3. Keep the table in static storage and ask find() first (the lock-free hit), then intern():
//        InternTable<1u << 12, 1u << 20> g_problems;
//        uint32_t id = g_problems.find(&key, sizeof key, h);
//        if (id == 0) id = g_problems.intern(&key, sizeof key, h, [&](uint32_t fresh) {
//          write_problem_record(fresh, key);  // into any chunk: readers resolve ids after reading
//        }).id;
//   4. Call reset() from the owner's fork handler.
// Ids start at 1; 0 is never returned and can mean "none".
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace cuprobe::shim {

// Tests only: when set, every table replaces each hash with what this returns (a test makes it
// constant to force collisions). Null in every real run: a load and a well-predicted branch.
inline uint64_t (*g_intern_hash_for_testing)(uint64_t hash) = nullptr;

inline uint64_t fnv1a64(const void* data, size_t len) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

template <uint32_t kSlots, uint32_t kArenaBytes, uint32_t kMaxProbes = kSlots>
class InternTable {
  static_assert(kSlots > 0 && (kSlots & (kSlots - 1)) == 0, "kSlots must be a power of two");
  static_assert(kArenaBytes % 8 == 0 && kArenaBytes < 0xfffffff0u, "offsets are 32-bit, in 8-byte units");
  static_assert(kMaxProbes >= 1 && kMaxProbes <= kSlots);

 public:
  struct Result {
    uint32_t id;
    bool remembered;  // later lookups of the same key find this id
  };

  // The key's id, or 0 when it is not in the table.
  uint32_t find(const void* key, size_t len, uint64_t hash) const {
    hash = effective(hash);
    uint32_t slot = uint32_t(hash) & (kSlots - 1);
    for (uint32_t probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kSlots - 1)) {
      uint64_t word = __atomic_load_n(&slots_[slot], __ATOMIC_ACQUIRE);
      if (word == 0) return 0;
      if (uint32_t id = match(word, key, len, hash)) return id;
    }
    return 0;
  }

  // The key's id; a new one, after on_new(id) has run, when the key was not there.
  template <typename OnNew>
  Result intern(const void* key, size_t len, uint64_t hash, OnNew&& on_new) {
    hash = effective(hash);
    uint32_t slot = uint32_t(hash) & (kSlots - 1);
    uint32_t probe = 0;
    for (; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kSlots - 1)) {
      uint64_t word = __atomic_load_n(&slots_[slot], __ATOMIC_ACQUIRE);
      if (word == 0) break;
      if (uint32_t id = match(word, key, len, hash)) return Result{id, true};
    }
    uint32_t id = __atomic_add_fetch(&issued_, 1u, __ATOMIC_RELAXED);
    uint32_t offset = 0;
    Entry* e = probe < kMaxProbes ? allocate(len, &offset) : nullptr;
    if (e == nullptr) {
      on_new(id);
      return Result{id, false};
    }
    e->hash = hash;
    e->id = id;
    e->len = uint32_t(len);
    memcpy(e + 1, key, len);
    on_new(id);
    const uint64_t mine = (hash >> 32) << 32 | (uint64_t(offset / 8) + 1);
    for (; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kSlots - 1)) {
      uint64_t seen = 0;
      if (__atomic_compare_exchange_n(&slots_[slot], &seen, mine, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
        return Result{id, true};
      }
      if (uint32_t other = match(seen, key, len, hash)) return Result{other, true};  // lost a race for this key
    }
    return Result{id, false};
  }

  void reset() {
    memset(slots_, 0, sizeof slots_);
    used_ = 0;
    issued_ = 0;
  }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    // then the key's bytes, padded to 8
  };
  static_assert(sizeof(Entry) == 16);

  static uint64_t effective(uint64_t hash) {
    auto testing = __atomic_load_n(&g_intern_hash_for_testing, __ATOMIC_RELAXED);
    return __builtin_expect(testing == nullptr, 1) ? hash : testing(hash);
  }

  // A slot word: the hash's upper half (a first filter that needs no entry), then the entry's
  // offset in 8-byte units plus one (a published slot is never 0).
  uint32_t match(uint64_t word, const void* key, size_t len, uint64_t hash) const {
    if (uint32_t(word >> 32) != uint32_t(hash >> 32)) return 0;
    const auto* e = reinterpret_cast<const Entry*>(arena_ + (size_t(uint32_t(word)) - 1) * 8);
    if (e->hash != hash || e->len != len || memcmp(e + 1, key, len) != 0) return 0;
    return e->id;
  }

  Entry* allocate(size_t len, uint32_t* offset) {
    if (len > kArenaBytes - sizeof(Entry)) return nullptr;
    uint32_t need = uint32_t((sizeof(Entry) + len + 7) & ~size_t(7));
    uint32_t cur = __atomic_load_n(&used_, __ATOMIC_RELAXED);
    do {
      if (need > kArenaBytes - cur) return nullptr;
    } while (!__atomic_compare_exchange_n(&used_, &cur, cur + need, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    *offset = cur;
    return reinterpret_cast<Entry*>(arena_ + cur);
  }

  // All zero at start, so that a table in static storage costs no file space (.bss).
  uint64_t slots_[kSlots] = {};
  uint32_t used_ = 0;    // arena bytes handed out
  uint32_t issued_ = 0;  // ids handed out: the last one
  alignas(8) unsigned char arena_[kArenaBytes] = {};
};

}  // namespace cuprobe::shim
