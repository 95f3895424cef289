// Process-wide records: the meta writer (chunks of their own, tid kMetaTid, under a mutex),
// interned strings, properties, and the anchor taken when the process started tracing. See
// recorder.h for the contract.
#include "recorder_internal.h"

#include "intern_table.h"

#include <pthread.h>
#include <string.h>

#include "clock.h"
#include "fork.h"
#include "lock_order.h"

namespace cuprobe::shim {

trace::Anchor g_process_start;  // when the shim was configured, or the process forked

namespace {

ThreadState g_meta;  // writer of process-wide records, under the meta lock (lock_order.h)

// Interned strings, keyed by their whole text (a string longer than a StringRecord holds is
// still told apart by all of it). Found without a lock; added under the meta lock, and its
// StringRecord written before any thread can get the id. When the table cannot remember a
// string it is simply written again under a new id.
constexpr uint32_t kStringSlots = 4096;
constexpr uint32_t kStringArenaBytes = 2u << 20;
constexpr uint32_t kMaxStringRecordText = 4000;
InternTable<kStringSlots, kStringArenaBytes> g_strings;

// In a forked child: forgets the interned strings and the meta writer's chunk.
void meta_after_fork() {
  g_strings.reset();
  memset(&g_meta, 0, sizeof g_meta);
}
CUPROBE_FORK_CHILD_RESET(meta_after_fork);

}  // namespace

void fill_anchor(trace::Anchor* a) {
  a->ticks = now_ticks();
  a->mono_ns = mono_ns();
  a->real_ns = real_ns();
}

MetaWriter::MetaWriter() { shim_lock(LockRank::kMeta); }
MetaWriter::~MetaWriter() { shim_unlock(LockRank::kMeta); }
char* MetaWriter::reserve(uint32_t bytes) {
  if (g_meta.mode == kThreadUnset) {
    if (configure() != kProcessOn || !ensure_started()) return nullptr;
    setup_state(g_meta, trace::kMetaTid, /*kept_only=*/true);
    g_meta.mode = kThreadReady;
  }
  return g_meta.mode == kThreadReady ? shim::reserve(g_meta, bytes) : nullptr;
}
void MetaWriter::commit(uint32_t bytes) { shim::commit(g_meta, bytes); }

uint32_t intern_string(const char* s) {
  if (s == nullptr) return 0;
  size_t full = strlen(s);
  uint64_t h = fnv1a64(s, full);
  if (uint32_t id = g_strings.find(s, full, h)) return id;
  uint32_t len = full > kMaxStringRecordText ? kMaxStringRecordText : uint32_t(full);
  MetaWriter w;
  return g_strings
      .intern(s, full, h,
              [&](uint32_t id) {
                uint32_t size = trace::align8(uint32_t(sizeof(trace::StringRecord) + len));
                if (char* p = w.reserve(size)) {
                  auto* r = reinterpret_cast<trace::StringRecord*>(p);
                  r->h = trace::make_header(trace::RecordType::kString, size);
                  r->id = id;
                  r->len = len;
                  memcpy(r->text, s, len);
                  w.commit(size);
                }
              })
      .id;
}

void write_property(trace::Property key, int64_t value) {
  MetaWriter w;
  constexpr uint32_t kSize = sizeof(trace::PropertyRecord);
  if (char* p = w.reserve(kSize)) {
    auto* r = reinterpret_cast<trace::PropertyRecord*>(p);
    r->h = trace::make_header(trace::RecordType::kProperty, kSize);
    r->key = uint32_t(key);
    r->pad = 0;
    r->value = value;
    w.commit(kSize);
  }
}

uint64_t process_start_mono_ns() { return g_process_start.mono_ns; }

}  // namespace cuprobe::shim
