// What the three parts of the trace writer share, and nothing else includes: recorder_file.cpp
// (the file: creating, growing and mapping it, handing out chunks, counting), recorder_lifecycle.cpp
// (configuration at load, thread set-up and exit, fork, exec, exit, fatal signals) and
// recorder_meta.cpp (process-wide records: the meta writer, interned strings, anchors).
// recorder.h is the interface the rest of the shim uses.
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "recorder.h"

namespace cuprobe::shim {

// ---- recorder_lifecycle.cpp -----------------------------------------------------------------

struct Config {
  char out_dir[4096];
  uint64_t max_bytes;
  bool quiet;
  trace::KeepMode keep;  // CUPROBE_KEEP
  uint64_t ring_bytes;   // kLast: the ring's size
  uint64_t delay_ns;     // CUPROBE_DELAY_S: capture window start after the shim's start; 0 none
  uint64_t duration_ns;  // CUPROBE_DURATION_S: its length; 0 to the end
};
extern Config g_config;

enum ProcessMode : uint32_t { kProcessUnconfigured = 0, kProcessOn = 1, kProcessOff = 2 };

// Reads the configuration once (the first caller, normally the constructor at load). Returns the
// ProcessMode.
uint32_t configure();

// CUPROBE_WINDOW_NVTX (nvtx_window.cpp): read at configuration; the range name, or nullptr.
void nvtx_window_configure();
const char* nvtx_window_name();

// Installs the fatal-signal and end-signal handlers (once the trace file exists).
void install_signal_handlers();

// Start time of this process in clock ticks since boot (/proc/self/stat).
uint64_t proc_start_time();

// The file at `path` was left by this very process before it exec'd the current program: mark it
// as ended by exec instead of leaving it looking unfinished.
void close_exec_predecessor(const char* path);

// ---- recorder_file.cpp ----------------------------------------------------------------------

constexpr uint32_t kMaxSegments = 4096;

struct Segment {
  char* base;
  uint32_t first_chunk;
  uint32_t n_chunks;
};

// Everything that belongs to this process's trace file. Reset in a forked child.
struct ProcessTrace {
  int fd;
  trace::FileHeader* hdr;
  Segment segments[kMaxSegments];
  uint32_t n_segments;
  uint32_t mapped_chunks;  // atomic
  uint32_t max_chunks;
  uint32_t full;               // atomic: no more chunks will be handed out
  uint32_t prefaulted;         // atomic: chunks [0, prefaulted) are mapped and touched
  uint32_t helper_wake;        // futex word: bumped to wake the helper
  uint32_t helper_running;     // a helper thread serves this process's file
  uint32_t started;  // atomic: the file exists and is mapped
  uint32_t failed;   // atomic: creating it failed; this process is not traced
  char path[4096 + 256];
  // Flight recorder (docs/flight-recorder.md), under the ring lock but `ring_active` (atomic).
  uint32_t ring_active;     // routine chunks are ring chunks from now on
  uint32_t ring_max;        // ring chunks wanted
  uint32_t ring_switch_at;  // kAuto: chunks claimed when the ring begins
  uint32_t ring_count;      // ring chunks in the file (sealed and threads' current ones)
  uint32_t* fifo;           // sealed ring chunks, oldest first (a circular buffer)
  uint32_t fifo_cap, fifo_head, fifo_size;
};
extern ProcessTrace g_trace;

// Creates and maps the file at the first call of the process; false when it cannot be had.
bool ensure_started();
// Sets up a writer's state for thread `tid` and claims its first chunk. A `kept_only` writer (the
// meta writer) never writes into the ring.
void setup_state(ThreadState& t, uint32_t tid, bool kept_only = false);
// A thread that ends gives its current ring chunk back to the ring (sealed: it may be overwritten).
void seal_thread_chunk(ThreadState& t);
// Adds a thread's routine calls skipped outside the capture window to the header.
void flush_window_skipped(ThreadState& t);
// At exit: the file is cut to the chunks handed out; no more are (see recorder_file.cpp).
void trim_trace_file();

// ---- recorder_meta.cpp ----------------------------------------------------------------------

extern trace::Anchor g_process_start;  // when the shim was configured, or the process forked

void fill_anchor(trace::Anchor* a);  // async-signal-safe

inline void copy_str(char* dst, size_t cap, const char* src) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
}

}  // namespace cuprobe::shim
