// The shim's trace writer: per-thread chunks of a file mapped MAP_SHARED (trace_format.h).
//
// Contract for the hot path (reserve/commit): no allocation, no lock, no system call once a
// thread has a chunk with room; a record becomes durable, also against SIGKILL, at commit. The
// slow path (first event of a thread or process, chunk rollover, file growth) may take a mutex
// and make system calls. When no chunk can be had the event is dropped and counted, never
// waited for. The thread-local state is plain data in initial-exec TLS.
#pragma once

#include <stdint.h>

#include "cuprobe/trace_format.h"

namespace cuprobe::shim {

struct ThreadState {
  uint32_t generation;  // == g_generation when the fields below belong to this process
  uint32_t guard;       // nonzero while the shim or a real call it forwards runs
  trace::ChunkHeader* chunk;
  uint32_t pos;  // bytes used in the chunk's data area
  uint32_t tid;
  uint32_t seq;            // chunks this thread has claimed
  int32_t device;          // cached current CUDA device, -1 when unknown
  uint32_t device_probed;  // the real cudaGetDevice was asked once
  uint16_t inflight_api;   // trace::kNoApi when no real call is in flight
  uint16_t pad;
  uint64_t inflight_start;
};

extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

enum class Mode : uint32_t { kUnconfigured = 0, kOn = 1, kOff = 2 };
extern Mode g_mode;
extern uint32_t g_generation;  // bumped in every forked child
extern bool g_launch_events;   // CUPROBE_LAUNCH_EVENTS=1: counted APIs are recorded as events

// Reads the configuration once (environment); returns the resulting mode.
Mode configure();

inline bool recording_on() {
  Mode m = __atomic_load_n(&g_mode, __ATOMIC_ACQUIRE);
  if (__builtin_expect(m == Mode::kOn, 1)) return true;
  return m == Mode::kUnconfigured && configure() == Mode::kOn;
}

inline char* chunk_data(trace::ChunkHeader* c) {
  return reinterpret_cast<char*>(c) + trace::kChunkHeaderSize;
}

char* reserve_slow(ThreadState& t, uint32_t bytes);

// Room for one record of `bytes` (a multiple of 8), or nullptr: the event is dropped (and was
// counted). Nothing is visible to readers before commit().
inline char* reserve(ThreadState& t, uint32_t bytes) {
  if (__builtin_expect(t.generation == __atomic_load_n(&g_generation, __ATOMIC_RELAXED) &&
                           t.chunk != nullptr && t.pos + bytes <= trace::kChunkDataSize,
                       1)) {
    return chunk_data(t.chunk) + t.pos;
  }
  return reserve_slow(t, bytes);
}

inline void commit(ThreadState& t, uint32_t bytes) {
  t.pos += bytes;
  __atomic_store_n(&t.chunk->used, t.pos, __ATOMIC_RELEASE);
}

// The thread's current chunk for counting, claiming one if needed; nullptr when none can be had.
inline trace::ChunkHeader* counting_chunk(ThreadState& t) {
  if (__builtin_expect(t.generation == __atomic_load_n(&g_generation, __ATOMIC_RELAXED) &&
                           t.chunk != nullptr,
                       1)) {
    return t.chunk;
  }
  return reserve_slow(t, 0) ? t.chunk : nullptr;
}

void count_stat(trace::Stat stat, uint64_t n = 1);
void set_stat_max(trace::Stat stat, uint64_t value);

// Process-wide records (strings, devices, properties) go to chunks of their own, written under
// a mutex held for the writer's lifetime. They are rare: never use these on a per-call hot path.
class MetaWriter {
 public:
  MetaWriter();
  ~MetaWriter();
  MetaWriter(const MetaWriter&) = delete;
  MetaWriter& operator=(const MetaWriter&) = delete;
  char* reserve(uint32_t bytes);
  void commit(uint32_t bytes);
};
uint32_t intern_string(const char* s);  // 0 for nullptr
void write_property(trace::Property key, int64_t value);

// Path of this process's trace file ("" before the first event).
const char* trace_path();

}  // namespace cuprobe::shim
