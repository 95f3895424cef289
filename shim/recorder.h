// The shim's trace writer: per-thread chunks of a file mapped MAP_SHARED (trace_format.h).
//
// Contract for the hot path (reserve/commit, counting): no allocation, no lock, no system call
// once a thread is set up and has a chunk with room; a record becomes durable, also against
// SIGKILL, at commit. The slow path (first event of a thread or process, chunk rollover, file
// growth) may take a mutex and make system calls. When no chunk can be had the event is
// dropped and counted, never waited for.
//
// One word of thread-local state says whether the fast path may be taken: it folds the
// recursion guard, the process's configuration and fork (a forked child resets the state of
// its only thread) into a single compare.
//
// Implemented in recorder_file.cpp (the file, its segments and chunks), recorder_lifecycle.cpp
// (configuration, threads, fork, exec, exit, signals) and recorder_meta.cpp (process-wide
// records, interned strings); recorder_internal.h holds what they share.
#pragma once

#include <stdint.h>

#include "cuprobe/trace_format.h"

namespace cuprobe::shim {

enum ThreadMode : uint32_t {
  kThreadUnset = 0,  // not set up in this process yet: take the slow path
  kThreadReady = 1,  // set up, not inside a hooked call
  kThreadBusy = 2,   // inside the shim or a real call it forwards: pass through
  kThreadOff = 3,    // tracing is off for this process: pass through
};

struct ThreadState {
  uint32_t mode;  // ThreadMode
  uint32_t pos;   // bytes used in the chunk's data area (kChunkDataSize when there is no chunk)
  trace::ChunkHeader* chunk;
  uint64_t* counts;  // &chunk->counts[0][device slot]; nullptr when calls are not counted
  // Flight recorder: once `chunk` is a ring chunk (one that may be overwritten), records of the
  // always-kept kinds go to a kept stream of chunks of their own (split = 1). Until then they
  // share `chunk` with routine records.
  uint8_t split;
  uint8_t kept_only;      // every chunk of this writer is kept (the meta writer)
  uint16_t keep_budget;   // records still kept because a plan selection is open on this thread
  uint32_t kpos;          // like pos, for kchunk
  trace::ChunkHeader* kchunk;
  uint32_t kseq;          // kept chunks this thread has claimed
  uint32_t chunk_idx;     // index of `chunk` in the file
  uint32_t window_skipped;  // routine calls outside the capture window not yet added to the header
  uint32_t tid;
  uint32_t seq;            // chunks this thread has claimed
  int32_t device;          // cached current CUDA device, -1 when unknown
  uint32_t device_probed;  // the real cudaGetDevice was asked once
  uint16_t inflight_api;   // trace::kNoApi when no real call is in flight
  uint8_t launch_decided;  // the fault plan has decided the kernel launch in progress (hook.h)
  uint8_t pad;
  int32_t injected_error;  // a CUDA runtime error the fault plan returned that the runtime's
                           // own last-error state does not know about; 0 when none
  uint64_t inflight_start;
  const void* caller;  // return address of the current allocation wrapper (its calling module)
};

extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

extern bool g_launch_events;  // CUPROBE_LAUNCH_EVENTS=1: counted APIs are recorded as events

// Whether this process traces at all (configured, and not CUPROBE_DISABLE=1). Creates nothing.
bool tracing_on();

// Sets the calling thread up (configuration, the process's trace file, a first chunk).
// Returns the thread's mode afterwards: kThreadReady, or kThreadOff when nothing is traced.
uint32_t thread_setup(ThreadState& t);

inline char* chunk_data(trace::ChunkHeader* c) {
  return reinterpret_cast<char*>(c) + trace::kChunkHeaderSize;
}

char* reserve_slow(ThreadState& t, uint32_t bytes);

// Room for one record of up to `bytes` (a multiple of 8) in a set-up thread, or nullptr: the
// event is dropped (and was counted). Nothing is visible to readers before commit().
inline char* reserve(ThreadState& t, uint32_t bytes) {
  if (__builtin_expect(t.pos + bytes <= trace::kChunkDataSize, 1)) return chunk_data(t.chunk) + t.pos;
  return reserve_slow(t, bytes);
}

inline void commit(ThreadState& t, uint32_t bytes) {
  t.pos += bytes;
  __atomic_store_n(&t.chunk->used, t.pos, __ATOMIC_RELEASE);
}

char* reserve_kept_slow(ThreadState& t, uint32_t bytes);

// Room for a record of an always-kept kind (a search, a plan selection, a failure, an allocation,
// a problem; docs/flight-recorder.md): in the kept stream once the thread writes routine records
// into the ring, else where reserve() puts it. Pair with commit_kept().
inline char* reserve_kept(ThreadState& t, uint32_t bytes) {
  if (__builtin_expect(!t.split, 1)) {
    char* p = reserve(t, bytes);
    if (__builtin_expect(!t.split, 1)) return p;
    // This very reservation claimed the thread's first ring chunk, which moves kept records to
    // their own stream (next_chunk): the record goes there too, so that commit_kept finds it. The
    // routine room just reserved is left unused (reserve() does not advance until a commit).
  }
  if (__builtin_expect(t.kpos + bytes <= trace::kChunkDataSize, 1)) return chunk_data(t.kchunk) + t.kpos;
  return reserve_kept_slow(t, bytes);
}

inline void commit_kept(ThreadState& t, uint32_t bytes) {
  if (__builtin_expect(!t.split, 1)) return commit(t, bytes);
  t.kpos += bytes;
  __atomic_store_n(&t.kchunk->used, t.kpos, __ATOMIC_RELEASE);
}

// Either stream: reserve_kept/commit_kept when `keep`, else reserve/commit.
inline char* reserve_as(ThreadState& t, bool keep, uint32_t bytes) {
  return keep ? reserve_kept(t, bytes) : reserve(t, bytes);
}
inline void commit_as(ThreadState& t, bool keep, uint32_t bytes) {
  if (keep) {
    commit_kept(t, bytes);
  } else {
    commit(t, bytes);
  }
}

// Capture window (CUPROBE_DELAY_S, CUPROBE_DURATION_S): routine calls that start outside
// [g_window_lo, g_window_hi) ticks are counted, not written. g_window_on is false without one.
extern bool g_window_on;
extern uint64_t g_window_lo;
extern uint64_t g_window_hi;
// CUPROBE_WINDOW_NVTX (nvtx_window.cpp): the window is open only while a range of that name is.
extern bool g_window_nvtx;
extern uint32_t g_nvtx_open;
inline bool outside_window(uint64_t start_ticks) {
  if (__builtin_expect(!g_window_on, 1)) return false;
  if (start_ticks < g_window_lo || start_ticks >= g_window_hi) return true;
  return g_window_nvtx && __atomic_load_n(&g_nvtx_open, __ATOMIC_RELAXED) == 0;
}
void note_outside_window(ThreadState& t);

// Points t.counts at the thread's current chunk and device (after either changes).
void retarget_counts(ThreadState& t);

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
// The id of a string's StringRecord; 0 for nullptr. Strings are told apart by their text, not
// by a hash alone. A string seen before costs a hash, a table look-up and a memcmp, no lock; a new
// one is written under the meta lock (so never call this while holding a MetaWriter).
uint32_t intern_string(const char* s);
void write_property(trace::Property key, int64_t value);

// The mapped header of this process's trace file, nullptr before it exists.
trace::FileHeader* trace_header();
// CLOCK_MONOTONIC when the shim was configured (or the process forked).
uint64_t process_start_mono_ns();

}  // namespace cuprobe::shim
