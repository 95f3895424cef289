// The descriptor and handle mirror; see cudnn_mirror.h.
#include "cudnn_mirror.h"

#include <string.h>
#include <sys/mman.h>

#include "recorder.h"

namespace cuprobe::shim {

namespace {

constexpr uint32_t kIndexSlots = 1u << 18;  // 4 MiB of index
constexpr uint32_t kPoolEntries = 1u << 17;  // up to 131072 live descriptors (24 MiB reserved)
constexpr uint32_t kMaxProbe = 256;
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = 1;
constexpr uint64_t kClaiming = 2;  // an inserter owns the slot and is filling it in
constexpr uint32_t kNoEntry = 0xffffffffu;

struct IndexSlot {
  uint64_t key;    // descriptor pointer, kEmpty or kTombstone (atomic)
  uint32_t entry;  // pool index
  uint32_t pad;
};

IndexSlot* g_index;
DescEntry* g_pool;
uint32_t g_pool_bump;     // entries [0, bump) were handed out at least once
uint64_t g_free_head = kNoEntry;  // (tag << 32) | index of the first free entry
uint32_t* g_free_next;    // next free entry of each pool entry
uint32_t g_next_id = 1;
uint32_t g_init_state;    // 0 not yet, 1 in progress, 2 ready, 3 failed

bool ensure_tables() {
  uint32_t s = __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE);
  if (s == 2) return true;
  if (s == 3) return false;
  uint32_t expected = 0;
  if (__atomic_compare_exchange_n(&g_init_state, &expected, 1u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    size_t index_bytes = sizeof(IndexSlot) * kIndexSlots;
    size_t pool_bytes = sizeof(DescEntry) * kPoolEntries;
    size_t next_bytes = sizeof(uint32_t) * kPoolEntries;
    void* a = mmap(nullptr, index_bytes + pool_bytes + next_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED) {
      __atomic_store_n(&g_init_state, 3u, __ATOMIC_RELEASE);
      return false;
    }
    g_index = static_cast<IndexSlot*>(a);
    g_pool = reinterpret_cast<DescEntry*>(static_cast<char*>(a) + index_bytes);
    g_free_next = reinterpret_cast<uint32_t*>(static_cast<char*>(a) + index_bytes + pool_bytes);
    __atomic_store_n(&g_init_state, 2u, __ATOMIC_RELEASE);
    return true;
  }
  while ((s = __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE)) == 1) {
  }
  return s == 2;
}

uint32_t hash_key(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return uint32_t(k) & (kIndexSlots - 1);
}

uint32_t pool_take() {
  uint64_t head = __atomic_load_n(&g_free_head, __ATOMIC_ACQUIRE);
  while (uint32_t(head) != kNoEntry) {
    uint32_t idx = uint32_t(head);
    uint64_t next = (((head >> 32) + 1) << 32) | __atomic_load_n(&g_free_next[idx], __ATOMIC_RELAXED);
    if (__atomic_compare_exchange_n(&g_free_head, &head, next, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return idx;
  }
  uint32_t idx = __atomic_fetch_add(&g_pool_bump, 1u, __ATOMIC_RELAXED);
  return idx < kPoolEntries ? idx : kNoEntry;
}

void pool_give(uint32_t idx) {
  uint64_t head = __atomic_load_n(&g_free_head, __ATOMIC_ACQUIRE);
  uint64_t next;
  do {
    __atomic_store_n(&g_free_next[idx], uint32_t(head), __ATOMIC_RELAXED);
    next = (((head >> 32) + 1) << 32) | idx;
  } while (!__atomic_compare_exchange_n(&g_free_head, &head, next, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
}

IndexSlot* find_slot(uint64_t key) {
  uint32_t h = hash_key(key);
  for (uint32_t i = 0; i < kMaxProbe; ++i) {
    IndexSlot& s = g_index[(h + i) & (kIndexSlots - 1)];
    uint64_t k = __atomic_load_n(&s.key, __ATOMIC_ACQUIRE);
    if (k == key) return &s;
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

// Handles: few, long-lived; a small table with the same probing.
constexpr uint32_t kHandleSlots = 1024;
struct HandleSlot {
  uint64_t key;
  int32_t device;
  int32_t pad;
  uint64_t stream;
};
HandleSlot g_handles[kHandleSlots];

HandleSlot* handle_slot(const void* handle, bool create) {
  uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(handle));
  if (key <= kTombstone) return nullptr;
  uint32_t h = hash_key(key) & (kHandleSlots - 1);
  for (uint32_t i = 0; i < kHandleSlots; ++i) {
    HandleSlot& s = g_handles[(h + i) & (kHandleSlots - 1)];
    uint64_t k = __atomic_load_n(&s.key, __ATOMIC_ACQUIRE);
    if (k == key) return &s;
    if (k == kEmpty || (create && k == kTombstone)) {
      if (!create) return nullptr;
      if (__atomic_compare_exchange_n(&s.key, &k, key, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return &s;
    }
  }
  return nullptr;
}

}  // namespace

DescEntry* desc_create(const void* key_ptr, uint16_t kind) {
  uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(key_ptr));
  if (key <= kClaiming || !ensure_tables()) return nullptr;
  // A stale entry means cuDNN reused the address of a descriptor whose destruction we missed.
  if (IndexSlot* old = find_slot(key)) {
    DescEntry* e = &g_pool[old->entry];
    memset(e, 0, sizeof *e);
    e->id = __atomic_fetch_add(&g_next_id, 1u, __ATOMIC_RELAXED);
    e->kind = kind;
    return e;
  }
  uint32_t idx = pool_take();
  if (idx == kNoEntry) {
    count_stat(trace::kStatMirrorFull);
    return nullptr;
  }
  DescEntry* e = &g_pool[idx];
  memset(e, 0, sizeof *e);
  e->id = __atomic_fetch_add(&g_next_id, 1u, __ATOMIC_RELAXED);
  e->kind = kind;
  uint32_t h = hash_key(key);
  for (uint32_t i = 0; i < kMaxProbe; ++i) {
    IndexSlot& s = g_index[(h + i) & (kIndexSlots - 1)];
    uint64_t k = __atomic_load_n(&s.key, __ATOMIC_ACQUIRE);
    if (k != kEmpty && k != kTombstone) continue;
    if (!__atomic_compare_exchange_n(&s.key, &k, kClaiming, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    s.entry = idx;
    __atomic_store_n(&s.key, key, __ATOMIC_RELEASE);
    return e;
  }
  pool_give(idx);
  count_stat(trace::kStatMirrorFull);
  return nullptr;
}

DescEntry* desc_find(const void* key_ptr) {
  uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(key_ptr));
  if (key <= kClaiming || __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) != 2) return nullptr;
  IndexSlot* s = find_slot(key);
  return s ? &g_pool[s->entry] : nullptr;
}

void desc_destroy(const void* key_ptr) {
  uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(key_ptr));
  if (key <= kClaiming || __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) != 2) return;
  IndexSlot* s = find_slot(key);
  if (s == nullptr) return;
  uint32_t idx = s->entry;
  uint64_t expected = key;
  if (__atomic_compare_exchange_n(&s->key, &expected, kTombstone, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    pool_give(idx);
  }
}

void handle_created(const void* handle, int device) {
  if (HandleSlot* s = handle_slot(handle, true)) {
    s->device = device;
    s->stream = 0;
  }
}

void handle_set_stream(const void* handle, const void* stream) {
  if (HandleSlot* s = handle_slot(handle, true)) s->stream = uint64_t(reinterpret_cast<uintptr_t>(stream));
}

void handle_destroyed(const void* handle) {
  if (HandleSlot* s = handle_slot(handle, false)) __atomic_store_n(&s->key, kTombstone, __ATOMIC_RELEASE);
}

bool handle_lookup(const void* handle, int* device, const void** stream) {
  HandleSlot* s = handle_slot(handle, false);
  if (s == nullptr) return false;
  *device = s->device;
  *stream = reinterpret_cast<const void*>(uintptr_t(s->stream));
  return true;
}

}  // namespace cuprobe::shim
