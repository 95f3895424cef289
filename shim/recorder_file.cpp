// The trace file of this process: creating it in the run directory, growing it in segments that
// are mapped MAP_SHARED (a helper thread maps and touches chunks ahead of the writers), handing
// chunks to threads, and the statistics in its header. See recorder.h for the contract;
// trace_format.h for the layout.
#include "recorder_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "fork.h"
#include "lock_order.h"
#include "process_info.h"
#include "safe_files.h"
#include "sys_stat.h"

namespace cuprobe::shim {

ProcessTrace g_trace;
bool g_window_on = false;
uint64_t g_window_lo = 0;
uint64_t g_window_hi = UINT64_MAX;

namespace {

constexpr uint32_t kFirstSegmentChunks = 16;   // 1 MiB
constexpr uint32_t kLargestSegmentChunks = 128;  // 8 MiB: what a finished trace can waste at its end

// Chunks the helper thread maps and touches ahead of the writers: a first write to a fresh
// page of a shared mapping costs 6-10 us in the VMs measured (docs/dev/performance.md), which
// would otherwise land on the traced thread once every ~80 records.
constexpr uint32_t kPrefaultAhead = 32;
constexpr int kMadvPopulateWrite = 23;  // MADV_POPULATE_WRITE, absent from older headers

// The ring never gives up its last chunks to the kept stream: with fewer, threads would
// overwrite each other's newest records.
constexpr uint32_t kMinRingChunks = 4;
// The smallest ring configured (a trace limit of a few MiB): half of it can go to kept records.
constexpr uint32_t kSmallestRing = 8;
// Sealed ring chunks the circular buffer can hold beyond the ring's size: chunks claimed past it
// while every ring chunk was some thread's current one.
constexpr uint32_t kFifoSlack = 4096;

uint64_t g_early_stats[trace::kStatCount];  // counted before the file exists

void say(const char* fmt, const char* a, const char* b) {
  if (g_config.quiet) return;
  fprintf(stderr, fmt, a, b);
}

void start_prefault_helper();

// Creates the run directory (and its parents) with mode 0700. A final component that is a
// symbolic link is followed only when the link belongs to us or to root.
bool make_run_dir(const char* dir, const char** why) {
  char buf[4096];
  copy_str(buf, sizeof buf, dir);
  size_t n = strlen(buf);
  for (size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char saved = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
      *why = strerror(errno);
      return false;
    }
    buf[i] = saved;
  }
  struct stat st;
  if (path_status(dir, &st, false) != 0) {
    *why = strerror(errno);
    return false;
  }
  if (S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
    *why = "it is a symbolic link owned by another user";
    return false;
  }
  if (path_status(dir, &st, true) != 0 || !S_ISDIR(st.st_mode)) {
    *why = "it is not a directory";
    return false;
  }
  return true;
}

void sanitize(char* s) {
  for (; *s; ++s) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '.' || c == '_';
    if (!ok) *s = '_';
  }
}

int create_trace_file(char* path, size_t cap) {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  sanitize(host);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (attempt == 0) {
      snprintf(path, cap, "%s/%s-%d.cuprobe", g_config.out_dir, host, int(getpid()));
    } else {
      snprintf(path, cap, "%s/%s-%d-%d.cuprobe", g_config.out_dir, host, int(getpid()), attempt);
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
    if (attempt == 0) close_exec_predecessor(path);
  }
  errno = EEXIST;
  return -1;
}

// The flight recorder's and the capture window's settings, into the new file's header. The ring
// of kLast starts with the file; kAuto's when three quarters of the limit are claimed.
void configure_ring(trace::FileHeader* hdr) {
  trace::RingInfo& r = hdr->ring;
  r.keep_mode = uint32_t(g_config.keep);
  g_trace.ring_active = 0;
  g_trace.ring_count = 0;
  g_trace.fifo_head = g_trace.fifo_size = 0;
  if (g_config.keep != trace::KeepMode::kAll) {
    uint64_t bytes = g_config.keep == trace::KeepMode::kLast ? g_config.ring_bytes
                                                             : uint64_t(g_trace.max_chunks / 4) * trace::kChunkSize;
    uint64_t chunks = (bytes + trace::kChunkSize - 1) / trace::kChunkSize;
    uint64_t cap = g_trace.max_chunks > kSmallestRing ? g_trace.max_chunks : kSmallestRing;
    if (chunks > cap) chunks = cap;
    if (chunks < kSmallestRing) chunks = kSmallestRing;
    g_trace.ring_max = uint32_t(chunks);
    g_trace.ring_switch_at = g_config.keep == trace::KeepMode::kLast || g_trace.max_chunks <= chunks
                                 ? 0
                                 : g_trace.max_chunks - uint32_t(chunks);
    r.ring_bytes = chunks * trace::kChunkSize;
    hdr->features |= trace::kFeatureFlightRecorder;
  }
  if (g_config.delay_ns != 0 || g_config.duration_ns != 0 || g_window_nvtx) {
    // The window is measured from the shim's start in this process, in the trace's own ticks.
    double tpn = clock_ticks_per_ns();
    // 0 and UINT64_MAX: no bound on that side (an NVTX window alone, or no delay).
    uint64_t from = g_process_start.ticks + uint64_t(double(g_config.delay_ns) * tpn);
    uint64_t lo = g_config.delay_ns == 0 ? 0 : from;
    uint64_t hi = g_config.duration_ns == 0 ? UINT64_MAX : from + uint64_t(double(g_config.duration_ns) * tpn);
    r.window_lo_ticks = g_window_lo = lo;
    r.window_hi_ticks = g_window_hi = hi;
    hdr->features |= trace::kFeatureCaptureWindow;
    __atomic_store_n(&g_window_on, true, __ATOMIC_RELEASE);
  }
}

// Under the start lock (lock_order.h). Creates and maps the file, writes the header and the process records.
bool start_trace_locked() {
  const char* why = nullptr;
  if (!make_run_dir(g_config.out_dir, &why)) {
    say("cuprobe: cannot use run directory %s: %s; this process is not traced\n", g_config.out_dir, why);
    return false;
  }
  // `cuprobe record` refuses such a directory; under plain LD_PRELOAD the job is traced as asked,
  // and told (once per process) that others could change or read its traces there.
  if (files::Why unsafe; !files::private_dir(g_config.out_dir, &unsafe)) {
    say("cuprobe: warning: run directory %s is not private: %s\n", g_config.out_dir, unsafe.text);
  }
  int fd = create_trace_file(g_trace.path, sizeof g_trace.path);
  if (fd < 0) {
    say("cuprobe: cannot create a trace file in %s: %s; this process is not traced\n", g_config.out_dir,
        strerror(errno));
    return false;
  }
  int rc = posix_fallocate(fd, 0, 4096);
  void* p = rc == 0 ? mmap(nullptr, trace::kFileHeaderSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                    : MAP_FAILED;
  if (p == MAP_FAILED || ftruncate(fd, trace::kFileHeaderSize) != 0) {
    say("cuprobe: cannot map trace file %s: %s; this process is not traced\n", g_trace.path,
        strerror(rc ? rc : errno));
    if (p != MAP_FAILED) munmap(p, trace::kFileHeaderSize);
    close(fd);
    unlink(g_trace.path);
    return false;
  }
  auto* hdr = static_cast<trace::FileHeader*>(p);
  memcpy(hdr->magic, trace::kMagic, sizeof hdr->magic);
  hdr->version = trace::kVersion;
  hdr->header_size = trace::kFileHeaderSize;
  hdr->features = 0;
  hdr->chunk_size = trace::kChunkSize;
  hdr->pid = uint32_t(getpid());
  hdr->clock_kind = uint32_t(g_clock_kind);
  hdr->ticks_per_ns = clock_ticks_per_ns();
  hdr->start = g_process_start;
  hdr->proc_start_time = proc_start_time();
  for (uint32_t i = 0; i < trace::kStatCount; ++i) hdr->stats[i] = __atomic_exchange_n(&g_early_stats[i], 0, __ATOMIC_RELAXED);
  g_trace.fd = fd;
  g_trace.n_segments = 0;
  __atomic_store_n(&g_trace.mapped_chunks, 0, __ATOMIC_RELAXED);
  uint64_t max_chunks = g_config.max_bytes / trace::kChunkSize;
  g_trace.max_chunks = uint32_t(max_chunks > 0xfffffff0ull ? 0xfffffff0ull : (max_chunks < 4 ? 4 : max_chunks));
  __atomic_store_n(&g_trace.full, 0, __ATOMIC_RELAXED);
  configure_ring(hdr);
  __atomic_store_n(&g_trace.hdr, hdr, __ATOMIC_RELEASE);
  install_signal_handlers();
  return true;
}

// Under the grow lock: maps segments until chunk `idx` is covered.
bool grow_locked(uint32_t idx) {
  while (__atomic_load_n(&g_trace.mapped_chunks, __ATOMIC_RELAXED) <= idx) {
    uint32_t mapped = g_trace.mapped_chunks;
    uint32_t shift = g_trace.n_segments < 6 ? g_trace.n_segments : 6;
    uint32_t n = kFirstSegmentChunks << shift;
    if (n > kLargestSegmentChunks) n = kLargestSegmentChunks;
    // Once the ring turns, the file grows only by kept chunks: small segments, so that what is
    // reserved on disk and never written stays small against a small ring.
    if (n > kFirstSegmentChunks && __atomic_load_n(&g_trace.ring_active, __ATOMIC_ACQUIRE)) n = kFirstSegmentChunks;
    if (n > g_trace.max_chunks - mapped) n = g_trace.max_chunks - mapped;
    if (n == 0 || g_trace.n_segments == kMaxSegments) return false;
    off_t off = off_t(trace::kFileHeaderSize) + off_t(mapped) * trace::kChunkSize;
    size_t len = size_t(n) * trace::kChunkSize;
    int rc;
    do {
      rc = posix_fallocate(g_trace.fd, off, off_t(len));
    } while (rc == EINTR);
    void* p = rc == 0 ? mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, g_trace.fd, off) : MAP_FAILED;
    if (p == MAP_FAILED) {
      count_stat(trace::kStatGrowFailures);
      return false;
    }
    g_trace.segments[g_trace.n_segments] = Segment{static_cast<char*>(p), mapped, n};
    __atomic_store_n(&g_trace.n_segments, g_trace.n_segments + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&g_trace.mapped_chunks, mapped + n, __ATOMIC_RELEASE);
  }
  return true;
}

// Safe without the grow mutex: segments are published (release) before n_segments counts them.
trace::ChunkHeader* chunk_at(uint32_t idx) {
  uint32_t n = __atomic_load_n(&g_trace.n_segments, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; ++i) {
    const Segment& s = g_trace.segments[i];
    if (idx >= s.first_chunk && idx - s.first_chunk < s.n_chunks) {
      return reinterpret_cast<trace::ChunkHeader*>(s.base + size_t(idx - s.first_chunk) * trace::kChunkSize);
    }
  }
  return nullptr;
}

void wake_helper_if_behind(uint32_t claimed_idx) {
  if (!__atomic_load_n(&g_trace.helper_running, __ATOMIC_RELAXED)) return;
  if (claimed_idx + kPrefaultAhead / 2 < __atomic_load_n(&g_trace.prefaulted, __ATOMIC_ACQUIRE)) return;
  __atomic_add_fetch(&g_trace.helper_wake, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &g_trace.helper_wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Makes every page of chunk `idx` present and writable. MADV_POPULATE_WRITE (Linux 5.14) does
// it inside the kernel, several times cheaper than one fault per page. Then one write to each
// page that leaves its contents as they are (a writer may already use the chunk): under
// hypervisors that shadow page tables, the first access from user space still traps, and it
// should trap here rather than on a traced thread.
// Not instrumented by ThreadSanitizer: a writer that already claimed the chunk may be storing to
// the word the add of zero touches, which an atomic read-modify-write cannot undo, but TSan reports
// as a race; and a report, even a suppressed one, symbolizes under the loader's lock, which a
// thread in refresh_modules (stacks.cpp) holds while it waits for the meta mutex of the reporter.
__attribute__((no_sanitize("thread"))) void prefault_chunk(uint32_t idx) {
  auto* base = reinterpret_cast<char*>(chunk_at(idx));
  if (base == nullptr) return;
  static bool populate_works = true;
  if (populate_works && madvise(base, trace::kChunkSize, kMadvPopulateWrite) != 0) populate_works = false;
  for (uint32_t off = 0; off < trace::kChunkSize; off += 4096) {
    __atomic_fetch_add(reinterpret_cast<uint32_t*>(base + off), 0u, __ATOMIC_RELAXED);
  }
}

void* prefault_helper(void*) {
  prctl(PR_SET_NAME, "cuprobe-prefault", 0, 0, 0);
  for (;;) {
    uint32_t seen = __atomic_load_n(&g_trace.helper_wake, __ATOMIC_ACQUIRE);
    uint32_t target = __atomic_load_n(&g_trace.hdr->chunks_claimed, __ATOMIC_ACQUIRE) + kPrefaultAhead;
    if (target > g_trace.max_chunks) target = g_trace.max_chunks;
    uint32_t done = __atomic_load_n(&g_trace.prefaulted, __ATOMIC_RELAXED);
    while (done < target && !__atomic_load_n(&g_trace.full, __ATOMIC_RELAXED)) {
      shim_lock(LockRank::kGrow);
      bool ok = grow_locked(done);
      shim_unlock(LockRank::kGrow);
      if (!ok) break;
      prefault_chunk(done);
      __atomic_store_n(&g_trace.prefaulted, ++done, __ATOMIC_RELEASE);
    }
    syscall(SYS_futex, &g_trace.helper_wake, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
  }
}

// The helper starts with every signal blocked, so that signals meant for the application are
// never delivered to it.
void start_prefault_helper() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t th;
  if (pthread_create(&th, &attr, prefault_helper, nullptr) == 0) {
    __atomic_store_n(&g_trace.helper_running, 1, __ATOMIC_RELEASE);
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Makes a claimed chunk a fresh one of thread `tid`, published by its magic (release) last.
void init_chunk(trace::ChunkHeader* c, uint32_t tid, uint32_t seq) {
  c->tid = tid;
  c->seq = seq;
  c->used = 0;
  c->anchor_ticks = now_ticks();
  c->anchor_mono_ns = mono_ns();
  __atomic_store_n(&c->magic, trace::kChunkMagic, __ATOMIC_RELEASE);
}

// A chunk never used before, from the end of the file; nullptr when the size limit is reached
// (or the file cannot grow). *idx: its index.
trace::ChunkHeader* claim_fresh(uint32_t tid, uint32_t seq, uint32_t* out_idx) {
  if (__atomic_load_n(&g_trace.full, __ATOMIC_RELAXED)) return nullptr;
  trace::FileHeader* hdr = g_trace.hdr;
  uint32_t idx = __atomic_load_n(&hdr->chunks_claimed, __ATOMIC_RELAXED);
  do {
    if (idx >= g_trace.max_chunks) {
      __atomic_store_n(&g_trace.full, 1, __ATOMIC_RELAXED);
      return nullptr;
    }
  } while (!__atomic_compare_exchange_n(&hdr->chunks_claimed, &idx, idx + 1, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
  trace::ChunkHeader* c = nullptr;
  if (idx < __atomic_load_n(&g_trace.mapped_chunks, __ATOMIC_ACQUIRE)) {
    c = chunk_at(idx);
  } else {
    shim_lock(LockRank::kGrow);
    if (grow_locked(idx)) c = chunk_at(idx);
    shim_unlock(LockRank::kGrow);
  }
  wake_helper_if_behind(idx);
  if (c == nullptr) {
    __atomic_store_n(&g_trace.full, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  init_chunk(c, tid, seq);
  *out_idx = idx;
  return c;
}

// ---- The flight recorder's ring --------------------------------------------------------------
// Under the ring lock. Routine chunks are claimed fresh until the ring holds ring_max chunks, then
// the oldest sealed one (a chunk its thread moved on from) is overwritten. What it held is counted
// in the header's RingInfo first, so the trace says what it lost.

void ring_push(uint32_t idx) {
  if (g_trace.fifo_size == g_trace.fifo_cap) return;  // cannot happen: the buffer has slack for every thread
  g_trace.fifo[(g_trace.fifo_head + g_trace.fifo_size) % g_trace.fifo_cap] = idx;
  g_trace.fifo_size++;
}

bool ring_pop(uint32_t* idx) {
  if (g_trace.fifo_size == 0) return false;
  *idx = g_trace.fifo[g_trace.fifo_head];
  g_trace.fifo_head = (g_trace.fifo_head + 1) % g_trace.fifo_cap;
  g_trace.fifo_size--;
  return true;
}

template <typename T>
void store_relaxed(T* p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

// Counts what a sealed ring chunk holds into RingInfo, then empties it and gives it to `tid`.
trace::ChunkHeader* recycle(uint32_t idx, uint32_t tid, uint32_t seq) {
  auto* c = chunk_at(idx);
  if (c == nullptr) return nullptr;
  trace::RingInfo& r = g_trace.hdr->ring;
  uint64_t records = 0, calls = 0, counted = 0;
  uint64_t first = r.overwritten_first_ticks, last = r.overwritten_last_ticks;
  uint32_t used = __atomic_load_n(&c->used, __ATOMIC_ACQUIRE);
  if (used > trace::kChunkDataSize) used = trace::kChunkDataSize;
  const char* data = chunk_data(c);
  for (uint32_t off = 0; off + sizeof(trace::RecordHeader) <= used;) {
    auto* h = reinterpret_cast<const trace::RecordHeader*>(data + off);
    if (h->size < sizeof(trace::RecordHeader) || h->size > used - off) break;
    ++records;
    if (h->type == uint8_t(trace::RecordType::kCall) && h->size >= sizeof(trace::CallRecord)) {
      auto* rec = reinterpret_cast<const trace::CallRecord*>(h);
      ++calls;
      uint64_t end = rec->start_ticks + rec->dur_ticks;  // a long call's true end is later: close enough
      if (first == 0 || rec->start_ticks < first) first = rec->start_ticks;
      if (end > last) last = end;
    }
    off += h->size;
  }
  for (auto& row : c->counts) {
    for (uint64_t n : row) counted += n;
  }
  for (uint64_t n : c->quiet_counts) counted += n;
  // Invisible to readers first, then emptied, then published again as the new thread's.
  __atomic_store_n(&c->magic, 0u, __ATOMIC_RELEASE);
  __atomic_store_n(&c->used, 0u, __ATOMIC_RELEASE);
  memset(c->counts, 0, sizeof c->counts);
  memset(c->quiet_counts, 0, sizeof c->quiet_counts);
  store_relaxed(&r.recycled_chunks, r.recycled_chunks + 1);
  store_relaxed(&r.overwritten_records, r.overwritten_records + records);
  store_relaxed(&r.overwritten_calls, r.overwritten_calls + calls);
  store_relaxed(&r.overwritten_counted, r.overwritten_counted + counted);
  store_relaxed(&r.overwritten_first_ticks, first);
  store_relaxed(&r.overwritten_last_ticks, last);
  init_chunk(c, tid, seq);
  return c;
}

// Under the ring lock: from now on routine chunks are ring chunks.
void activate_ring_locked() {
  if (g_trace.ring_active) return;
  if (g_trace.fifo == nullptr || g_trace.fifo_cap < g_trace.ring_max + kFifoSlack) {
    size_t cap = size_t(g_trace.ring_max) + kFifoSlack;
    void* p = mmap(nullptr, cap * sizeof(uint32_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;  // no ring: the trace stops growing at its limit, as with CUPROBE_KEEP=all
    g_trace.fifo = static_cast<uint32_t*>(p);
    g_trace.fifo_cap = uint32_t(cap);
  }
  g_trace.fifo_head = g_trace.fifo_size = 0;
  g_trace.ring_count = 0;
  store_relaxed(&g_trace.hdr->ring.started_ticks, now_ticks());
  __atomic_store_n(&g_trace.ring_active, 1u, __ATOMIC_RELEASE);
}

bool ring_wanted() {
  if (g_config.keep == trace::KeepMode::kAll) return false;
  if (__atomic_load_n(&g_trace.ring_active, __ATOMIC_ACQUIRE)) return true;
  return __atomic_load_n(&g_trace.hdr->chunks_claimed, __ATOMIC_RELAXED) >= g_trace.ring_switch_at;
}

// The next routine chunk of `t`: a fresh one before the ring starts; after, a fresh one while the
// ring is smaller than wanted, else the oldest sealed ring chunk, overwritten. The thread's current
// chunk, if a ring chunk, is sealed once the new one is had.
trace::ChunkHeader* claim_routine(ThreadState& t, uint32_t* idx, bool* ring) {
  *ring = false;
  if (!ring_wanted()) {
    trace::ChunkHeader* c = claim_fresh(t.tid, t.seq, idx);
    if (c == nullptr && g_config.keep == trace::KeepMode::kAll) set_stat_max(trace::kStatTraceLimitHit, 1);
    if (c != nullptr || g_config.keep == trace::KeepMode::kAll) return c;
  }
  shim_lock(LockRank::kRing);
  activate_ring_locked();
  trace::ChunkHeader* c = nullptr;
  if (g_trace.ring_active) {
    if (g_trace.ring_count < g_trace.ring_max && (c = claim_fresh(t.tid, t.seq, idx)) != nullptr) {
      g_trace.ring_count++;
    } else if (ring_pop(idx)) {
      c = recycle(*idx, t.tid, t.seq);
    } else if ((c = claim_fresh(t.tid, t.seq, idx)) != nullptr) {
      g_trace.ring_count++;  // every ring chunk is some thread's current one: the ring grows
    }
    if (c != nullptr && t.split && t.chunk != nullptr) ring_push(t.chunk_idx);
    *ring = c != nullptr;
  }
  shim_unlock(LockRank::kRing);
  return c;
}

// A chunk for a kept stream: fresh while the file has room, then taken from the ring (the oldest
// sealed ring chunk), as long as the ring keeps kMinRingChunks.
trace::ChunkHeader* claim_kept(uint32_t tid, uint32_t seq, uint32_t* idx) {
  if (trace::ChunkHeader* c = claim_fresh(tid, seq, idx)) return c;
  if (!__atomic_load_n(&g_trace.ring_active, __ATOMIC_ACQUIRE)) return nullptr;
  trace::ChunkHeader* c = nullptr;
  shim_lock(LockRank::kRing);
  if (g_trace.ring_count > kMinRingChunks && ring_pop(idx)) {
    g_trace.ring_count--;
    c = recycle(*idx, tid, seq);
  }
  shim_unlock(LockRank::kRing);
  return c;
}

// Claims the next chunk for `t`; false (and the thread's chunk unchanged) when none can be had.
bool next_chunk(ThreadState& t) {
  uint32_t idx = 0;
  bool ring = false;
  trace::ChunkHeader* c = t.kept_only ? claim_kept(t.tid, t.seq, &idx) : claim_routine(t, &idx, &ring);
  if (c == nullptr) return false;
  t.chunk = c;
  t.chunk_idx = idx;
  t.pos = 0;
  t.seq++;
  // Kept records move to a stream of their own with the thread's first ring chunk. Set only here;
  // when the reservation that got here was of a kept record, reserve_kept moves it to the kept
  // stream before it returns, so that a record is committed in the stream it was reserved in.
  if (ring) t.split = 1;
  retarget_counts(t);
  return true;
}

bool next_kept_chunk(ThreadState& t) {
  uint32_t idx = 0;
  trace::ChunkHeader* c = claim_kept(t.tid | trace::kKeptStreamBit, t.kseq, &idx);
  if (c == nullptr) return false;
  t.kchunk = c;
  t.kpos = 0;
  t.kseq++;
  return true;
}

}  // namespace

// At exit, the file keeps what was written: the chunks handed out, not the segments reserved
// ahead of them (a process that made two calls kept 1-3 MiB of reserve). No chunk is handed out
// from here on (threads still write into the chunks they hold; one that needs another counts its
// events as dropped). A claim already past its check of `full` finishes within instructions; the
// short pause lets it. Before the file is cut, every mapping past the cut is replaced by anonymous
// memory, so that a store there (such a claim preempted longer, the prefault helper's touch) lands
// in memory nobody reads instead of raising SIGBUS.
void trim_trace_file() {
  if (g_trace.hdr == nullptr || g_trace.fd < 0) return;
  __atomic_store_n(&g_trace.full, 1, __ATOMIC_SEQ_CST);
  struct timespec pause = {0, 200 * 1000};
  nanosleep(&pause, nullptr);
  shim_lock(LockRank::kGrow);
  uint32_t n = __atomic_load_n(&g_trace.hdr->chunks_claimed, __ATOMIC_ACQUIRE);
  uint32_t mapped = __atomic_load_n(&g_trace.mapped_chunks, __ATOMIC_ACQUIRE);
  bool ok = n < mapped;
  for (uint32_t i = 0; ok && i < g_trace.n_segments; ++i) {
    const Segment& seg = g_trace.segments[i];
    uint32_t end = seg.first_chunk + seg.n_chunks;
    if (end <= n) continue;
    uint32_t from = seg.first_chunk > n ? seg.first_chunk : n;
    char* at = seg.base + size_t(from - seg.first_chunk) * trace::kChunkSize;
    size_t len = size_t(end - from) * trace::kChunkSize;
    ok = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
  }
  if (ok && ftruncate(g_trace.fd, off_t(trace::kFileHeaderSize) + off_t(n) * trace::kChunkSize) == 0) {
    __atomic_store_n(&g_trace.mapped_chunks, n, __ATOMIC_RELEASE);
  }
  shim_unlock(LockRank::kGrow);
}

bool ensure_started() {
  if (__atomic_load_n(&g_trace.started, __ATOMIC_ACQUIRE)) return true;
  if (__atomic_load_n(&g_trace.failed, __ATOMIC_ACQUIRE)) return false;
  shim_lock(LockRank::kStart);
  bool ok = g_trace.started != 0;
  bool first = false;
  if (!ok && !g_trace.failed) {
    ok = start_trace_locked();
    first = ok;
    __atomic_store_n(ok ? &g_trace.started : &g_trace.failed, 1u, __ATOMIC_RELEASE);
  }
  shim_unlock(LockRank::kStart);
  // Outside the start mutex: these write records, which can come back here through reserve.
  if (first) {
    start_prefault_helper();
    write_process_records();
    if (const char* name = nvtx_window_name()) {
      __atomic_store_n(&g_trace.hdr->ring.window_marker, uint64_t(intern_string(name)), __ATOMIC_RELAXED);
    }
  }
  return ok;
}

void setup_state(ThreadState& t, uint32_t tid, bool kept_only) {
  t.tid = tid;
  t.chunk = nullptr;
  t.pos = trace::kChunkDataSize;  // no room until a chunk is claimed
  t.counts = nullptr;
  t.split = 0;
  t.kept_only = kept_only ? 1 : 0;
  t.keep_budget = 0;
  t.kchunk = nullptr;
  t.kpos = trace::kChunkDataSize;
  t.kseq = 0;
  t.chunk_idx = 0;
  t.window_skipped = 0;
  t.seq = 0;
  t.device = -1;
  t.device_probed = 0;
  t.inflight_api = trace::kNoApi;
  next_chunk(t);
}

namespace {

// In a forked child: drops every mapping of the parent's file; the child starts a file of its own
// at its first event.
void trace_file_after_fork() {
  if (g_trace.hdr != nullptr) {
    for (uint32_t i = 0; i < g_trace.n_segments; ++i) {
      munmap(g_trace.segments[i].base, size_t(g_trace.segments[i].n_chunks) * trace::kChunkSize);
    }
    munmap(g_trace.hdr, trace::kFileHeaderSize);
    close(g_trace.fd);
  }
  g_trace.hdr = nullptr;
  g_trace.fd = -1;
  g_trace.n_segments = 0;
  g_trace.mapped_chunks = 0;
  g_trace.full = 0;
  g_trace.prefaulted = 0;
  g_trace.helper_wake = 0;
  g_trace.helper_running = 0;  // the parent's helper thread does not exist in the child
  g_trace.started = 0;
  g_trace.failed = 0;
  g_trace.path[0] = 0;
  g_trace.ring_active = 0;  // the ring buffer's memory (fifo) is kept for the child's ring
  g_trace.ring_count = 0;
  g_trace.fifo_head = g_trace.fifo_size = 0;
}
CUPROBE_FORK_CHILD_RESET(trace_file_after_fork);

}  // namespace

char* reserve_slow(ThreadState& t, uint32_t bytes) {
  if (bytes > trace::kChunkDataSize || !next_chunk(t)) {
    count_stat(t.kept_only ? trace::kStatKeptDropped : trace::kStatDroppedEvents);
    return nullptr;
  }
  return chunk_data(t.chunk);
}

char* reserve_kept_slow(ThreadState& t, uint32_t bytes) {
  if (bytes > trace::kChunkDataSize || !next_kept_chunk(t)) {
    count_stat(trace::kStatKeptDropped);
    return nullptr;
  }
  return chunk_data(t.kchunk);
}

void seal_thread_chunk(ThreadState& t) {
  if (!t.split || t.chunk == nullptr || t.kept_only) return;
  shim_lock(LockRank::kRing);
  if (g_trace.ring_active) ring_push(t.chunk_idx);
  shim_unlock(LockRank::kRing);
  // A call made after this (a later thread-local destructor) claims a chunk anew.
  t.chunk = nullptr;
  t.counts = nullptr;
  t.pos = trace::kChunkDataSize;
}

void flush_window_skipped(ThreadState& t) {
  trace::FileHeader* hdr = __atomic_load_n(&g_trace.hdr, __ATOMIC_ACQUIRE);
  if (hdr != nullptr && t.window_skipped != 0) {
    __atomic_fetch_add(&hdr->ring.outside_window_calls, uint64_t(t.window_skipped), __ATOMIC_RELAXED);
  }
  t.window_skipped = 0;
}

// Added to the header every 256 calls, at thread end and at exit: a thread still running when the
// process ends leaves fewer than 256 uncounted.
void note_outside_window(ThreadState& t) {
  if (++t.window_skipped >= 256) flush_window_skipped(t);
}

void retarget_counts(ThreadState& t) {
  if (t.chunk == nullptr || g_launch_events) {
    t.counts = nullptr;
    return;
  }
  int slot = (t.device >= 0 && t.device < trace::kCountDevices) ? t.device : trace::kCountDevices;
  t.counts = &t.chunk->counts[0][slot];
}

void count_slow(ThreadState& t, int slot) {
  if (t.mode == kThreadUnset) thread_setup(t);
  if (t.mode != kThreadReady) return;
  if (t.device < 0 && !t.device_probed) {
    t.mode = kThreadBusy;
    current_device(t);
    t.mode = kThreadReady;
  }
  if (t.counts == nullptr) return;
  uint64_t* c = t.counts + slot * (trace::kCountDevices + 1);
  __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

void count_stat(trace::Stat stat, uint64_t n) {
  trace::FileHeader* hdr = __atomic_load_n(&g_trace.hdr, __ATOMIC_ACQUIRE);
  __atomic_fetch_add(hdr ? &hdr->stats[stat] : &g_early_stats[stat], n, __ATOMIC_RELAXED);
}

void set_stat_max(trace::Stat stat, uint64_t value) {
  trace::FileHeader* hdr = __atomic_load_n(&g_trace.hdr, __ATOMIC_ACQUIRE);
  uint64_t* p = hdr ? &hdr->stats[stat] : &g_early_stats[stat];
  uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (cur < value && !__atomic_compare_exchange_n(p, &cur, value, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

trace::FileHeader* trace_header() { return __atomic_load_n(&g_trace.hdr, __ATOMIC_ACQUIRE); }

}  // namespace cuprobe::shim
