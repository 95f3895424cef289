// Trace file management for the shim: configuration, creating the per-process file, growing it
// in segments, handing chunks to threads, process-wide records, fork, exit and fatal signals.
// See recorder.h for the contract; trace_format.h for the layout.
#include "recorder.h"

#include "faults.h"
#include "mem_sample.h"
#include "stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "process_info.h"

namespace cuprobe::shim {

__thread ThreadState t_state __attribute__((tls_model("initial-exec")));
bool g_launch_events = false;

namespace {

constexpr uint32_t kMaxSegments = 4096;
constexpr uint32_t kFirstSegmentChunks = 16;   // 1 MiB
constexpr uint32_t kLargestSegmentChunks = 128;  // 8 MiB: what a finished trace can waste at its end
constexpr uint64_t kDefaultMaxBytes = 4096ull << 20;
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
// Signals that end a process by default when nothing handles them (torchrun stopping its
// workers, a scheduler's SIGTERM, Ctrl-C in a program that does not catch it): the trace then
// says which signal ended the process instead of looking as if it had been SIGKILLed. Handled
// only while their disposition is the default: a handler the program installs replaces ours,
// and an ignored signal stays ignored.
constexpr int kEndSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
constexpr int kMaxSignal = 65;

struct Config {
  char out_dir[4096];
  uint64_t max_bytes;
  bool quiet;
};

// Chunks the helper thread maps and touches ahead of the writers: a first write to a fresh
// page of a shared mapping costs 6-10 us in the VMs measured (docs/performance.md), which
// would otherwise land on the traced thread once every ~80 records.
constexpr uint32_t kPrefaultAhead = 32;
constexpr int kMadvPopulateWrite = 23;  // MADV_POPULATE_WRITE, absent from older headers

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
};

enum ProcessMode : uint32_t { kProcessUnconfigured = 0, kProcessOn = 1, kProcessOff = 2 };
uint32_t g_process_mode = kProcessUnconfigured;
Config g_config;
ProcessTrace g_trace;
trace::Anchor g_process_start;  // when the shim was configured, or the process forked
ThreadState g_meta;  // writer of process-wide records, under g_meta_mutex
uint64_t g_early_stats[trace::kStatCount];
pthread_once_t g_config_once = PTHREAD_ONCE_INIT;
pthread_mutex_t g_start_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_grow_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_meta_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_key_t g_thread_key;
struct sigaction g_old_actions[kMaxSignal];

// Interned strings: hash -> id, open addressing; when full, strings are simply written again.
constexpr uint32_t kInternSlots = 4096;
struct InternSlot {
  uint64_t hash;
  uint32_t id;
};
InternSlot g_intern[kInternSlots];
uint32_t g_next_string_id = 1;

void copy_str(char* dst, size_t cap, const char* src) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
}

// ---- Configuration from the environment ----------------------------------------------------
// A value the shim cannot read is never half-read (strtoull of "-1" or "1MiB"): it is reported
// once on stderr and removed from this process's environment, so that the rest of the shim
// (stacks.cpp and mem_sample.cpp read their own variables after this) and every program this
// one runs take the default, and a job says it once rather than once per process. `cuprobe
// record` refuses the same values before the job starts: analyzer/cmds/record.cpp
// (kShimVariables) keeps the same rules; change both together.

bool g_env_quiet = false;  // CUPROBE_QUIET, known before anything else is checked

// A whole number in decimal digits only (no sign, space or unit) that fits in 64 bits.
bool parse_decimal(const char* s, uint64_t* out) {
  if (s == nullptr || *s == 0) return false;
  uint64_t v = 0;
  for (const char* p = s; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t d = uint64_t(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// write(2) from a stack buffer: this runs in the traced process while it loads.
void warn_env(const char* name, const char* value, const char* expected, const char* fallback) {
  if (!g_env_quiet) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, "cuprobe: %s=%.120s%s is not %s; using %s\n", name, value,
                     strlen(value) > 120 ? "..." : "", expected, fallback);
    if (n > 0) (void)!write(STDERR_FILENO, buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
  }
  unsetenv(name);
}

bool ascii_iequal(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b) {
    char x = (*a >= 'A' && *a <= 'Z') ? char(*a + ('a' - 'A')) : *a;
    if (x != *b) return false;
  }
  return *a == 0 && *b == 0;
}

// 1, true, yes, on / 0, false, no, off, in any case; unset or empty is false.
bool env_bool(const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == 0) return false;
  static const char* const kTrue[] = {"1", "true", "yes", "on"};
  static const char* const kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue) {
    if (ascii_iequal(v, t)) return true;
  }
  for (const char* f : kFalse) {
    if (ascii_iequal(v, f)) return false;
  }
  warn_env(name, v, "1 or 0 (true/false, yes/no, on/off)", "0");
  return false;
}

// A decimal number from `min` to `max`; `fallback` when unset or empty, or after a warning.
uint64_t env_number(const char* name, uint64_t min, uint64_t max, uint64_t fallback, const char* expected,
                    const char* fallback_text) {
  const char* v = getenv(name);
  if (v == nullptr || *v == 0) return fallback;
  uint64_t n = 0;
  if (!parse_decimal(v, &n) || n < min || n > max) {
    warn_env(name, v, expected, fallback_text);
    return fallback;
  }
  return n;
}

// One of `words` (null-terminated); nullptr when unset or empty, or after a warning.
const char* env_word(const char* name, const char* const* words, const char* expected, const char* fallback_text) {
  const char* v = getenv(name);
  if (v == nullptr || *v == 0) return nullptr;
  for (const char* const* w = words; *w; ++w) {
    if (strcmp(v, *w) == 0) return v;
  }
  warn_env(name, v, expected, fallback_text);
  return nullptr;
}

// Variables that other parts of the shim read after do_configure, checked here first (a bad
// one is removed, so they see none). The defaults named are those of stacks.cpp and
// mem_sample.cpp.
void check_other_variables() {
  static const char* const kStackModes[] = {"off", "errors", "alloc", "all", nullptr};
  env_word("CUPROBE_STACKS", kStackModes, "off, errors, alloc or all", "the default, alloc");
  env_number("CUPROBE_STACK_DEPTH", 1, 64, 0, "a number of frames from 1 to 64", "the default 32");
  env_number("CUPROBE_STACK_MIN_BYTES", 0, UINT64_MAX, 0, "a number of bytes (digits only)", "the default 1048576");
  env_number("CUPROBE_MEM_SAMPLE_MS", 0, UINT64_MAX, 0, "a number of milliseconds", "the default 500");
}

void say(const char* fmt, const char* a, const char* b) {
  if (g_config.quiet) return;
  fprintf(stderr, fmt, a, b);
}

void fill_anchor(trace::Anchor* a) {
  a->ticks = now_ticks();
  a->mono_ns = mono_ns();
  a->real_ns = real_ns();
}

void on_thread_exit(void*);
void start_prefault_helper();
void atfork_prepare();
void atfork_parent();
void atfork_child();

void do_configure() {
  const char* out = getenv("CUPROBE_OUT");
  copy_str(g_config.out_dir, sizeof g_config.out_dir, (out && *out) ? out : "cuprobe-trace");
  // Quiet first: it decides whether the others may warn.
  g_env_quiet = env_bool("CUPROBE_QUIET");
  g_config.quiet = g_env_quiet;
  // A limit past what a trace can hold (see start_trace_locked) is simply that much.
  uint64_t max_mb = env_number("CUPROBE_MAX_MB", 0, UINT64_MAX, kDefaultMaxBytes >> 20, "a number of MiB",
                               "the default 4096");
  g_config.max_bytes = max_mb > (UINT64_MAX >> 20) ? UINT64_MAX : max_mb << 20;
  g_launch_events = env_bool("CUPROBE_LAUNCH_EVENTS");
  static const char* const kClocks[] = {"auto", "monotonic", "tsc", "counter", nullptr};
  const char* clock = env_word("CUPROBE_CLOCK", kClocks, "auto, monotonic or tsc", "auto");
  clock_init(clock != nullptr && strcmp(clock, "auto") != 0 ? clock : nullptr);
  check_other_variables();
  fill_anchor(&g_process_start);
  faults_configure();
  mem_sample_configure();
  stacks_configure();
  pthread_key_create(&g_thread_key, on_thread_exit);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  uint32_t m = env_bool("CUPROBE_DISABLE") ? kProcessOff : kProcessOn;
  __atomic_store_n(&g_process_mode, m, __ATOMIC_RELEASE);
}

uint32_t configure() {
  pthread_once(&g_config_once, do_configure);
  return __atomic_load_n(&g_process_mode, __ATOMIC_ACQUIRE);
}

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
  struct statx st;
  if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_UID, &st) != 0) {
    *why = strerror(errno);
    return false;
  }
  if (S_ISLNK(st.stx_mode) && st.stx_uid != geteuid() && st.stx_uid != 0) {
    *why = "it is a symbolic link owned by another user";
    return false;
  }
  if (statx(AT_FDCWD, dir, 0, STATX_TYPE, &st) != 0 || !S_ISDIR(st.stx_mode)) {
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

// Start time of this process in clock ticks since boot; kept across exec, unlike the pid's
// other owners after reuse.
uint64_t proc_start_time() {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* p = strrchr(buf, ')');
  for (int field = 2; p != nullptr && field < 22; ++field) p = strchr(p + 1, ' ');
  return p ? strtoull(p + 1, nullptr, 10) : 0;
}

// The file at `path` was left by this very process before it exec'd the current program:
// mark it as ended by exec instead of leaving it looking unfinished.
void close_exec_predecessor(const char* path) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  trace::FileHeader h;
  if (pread(fd, &h, sizeof h, 0) == ssize_t(sizeof h) && memcmp(h.magic, trace::kMagic, sizeof h.magic) == 0 &&
      h.pid == uint32_t(getpid()) && h.proc_start_time != 0 && h.proc_start_time == proc_start_time() &&
      h.state == uint32_t(trace::FileState::kRecording)) {
    h.state = uint32_t(trace::FileState::kExeced);
    h.end.mono_ns = mono_ns();
    h.end.real_ns = real_ns();
    h.end.ticks = h.clock_kind == uint32_t(g_clock_kind) ? now_ticks() : 0;
    (void)!pwrite(fd, &h, sizeof h, 0);
  }
  close(fd);
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

void fatal_signal_handler(int sig, siginfo_t* info, void* ucontext);

void install_signal_handler(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fatal_signal_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &g_old_actions[sig]);
}

void install_signal_handlers() {
  for (int sig : kFatalSignals) install_signal_handler(sig);
  for (int sig : kEndSignals) {
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
    install_signal_handler(sig);
  }
}

// Under g_start_mutex. Creates and maps the file, writes the header and the process records.
bool start_trace_locked() {
  const char* why = nullptr;
  if (!make_run_dir(g_config.out_dir, &why)) {
    say("cuprobe: cannot use run directory %s: %s; this process is not traced\n", g_config.out_dir, why);
    return false;
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
  __atomic_store_n(&g_trace.hdr, hdr, __ATOMIC_RELEASE);
  install_signal_handlers();
  return true;
}

bool ensure_started() {
  if (__atomic_load_n(&g_trace.started, __ATOMIC_ACQUIRE)) return true;
  if (__atomic_load_n(&g_trace.failed, __ATOMIC_ACQUIRE)) return false;
  pthread_mutex_lock(&g_start_mutex);
  bool ok = g_trace.started != 0;
  bool first = false;
  if (!ok && !g_trace.failed) {
    ok = start_trace_locked();
    first = ok;
    __atomic_store_n(ok ? &g_trace.started : &g_trace.failed, 1u, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_start_mutex);
  // Outside the start mutex: these write records, which can come back here through reserve.
  if (first) {
    start_prefault_helper();
    write_process_records();
  }
  return ok;
}

// Under g_grow_mutex: maps segments until chunk `idx` is covered.
bool grow_locked(uint32_t idx) {
  while (__atomic_load_n(&g_trace.mapped_chunks, __ATOMIC_RELAXED) <= idx) {
    uint32_t mapped = g_trace.mapped_chunks;
    uint32_t shift = g_trace.n_segments < 6 ? g_trace.n_segments : 6;
    uint32_t n = kFirstSegmentChunks << shift;
    if (n > kLargestSegmentChunks) n = kLargestSegmentChunks;
    if (n > g_trace.max_chunks - mapped) n = g_trace.max_chunks - mapped;
    if (n == 0 || g_trace.n_segments == kMaxSegments) {
      set_stat_max(trace::kStatTraceLimitHit, 1);
      return false;
    }
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
      pthread_mutex_lock(&g_grow_mutex);
      bool ok = grow_locked(done);
      pthread_mutex_unlock(&g_grow_mutex);
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

trace::ChunkHeader* claim_chunk(uint32_t tid, uint32_t seq) {
  if (__atomic_load_n(&g_trace.full, __ATOMIC_RELAXED)) return nullptr;
  trace::FileHeader* hdr = g_trace.hdr;
  uint32_t idx = __atomic_load_n(&hdr->chunks_claimed, __ATOMIC_RELAXED);
  do {
    if (idx >= g_trace.max_chunks) {
      __atomic_store_n(&g_trace.full, 1, __ATOMIC_RELAXED);
      set_stat_max(trace::kStatTraceLimitHit, 1);
      return nullptr;
    }
  } while (!__atomic_compare_exchange_n(&hdr->chunks_claimed, &idx, idx + 1, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
  trace::ChunkHeader* c = nullptr;
  if (idx < __atomic_load_n(&g_trace.mapped_chunks, __ATOMIC_ACQUIRE)) {
    c = chunk_at(idx);
  } else {
    pthread_mutex_lock(&g_grow_mutex);
    if (grow_locked(idx)) c = chunk_at(idx);
    pthread_mutex_unlock(&g_grow_mutex);
  }
  wake_helper_if_behind(idx);
  if (c == nullptr) {
    __atomic_store_n(&g_trace.full, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  c->tid = tid;
  c->seq = seq;
  c->used = 0;
  c->anchor_ticks = now_ticks();
  c->anchor_mono_ns = mono_ns();
  __atomic_store_n(&c->magic, trace::kChunkMagic, __ATOMIC_RELEASE);
  return c;
}

void on_thread_exit(void*) {
  ThreadState& t = t_state;
  if (t.mode != kThreadReady || t.chunk == nullptr) return;
  t.mode = kThreadBusy;
  constexpr uint32_t kSize = sizeof(trace::ThreadEnd);
  if (char* p = reserve(t, kSize)) {
    auto* r = reinterpret_cast<trace::ThreadEnd*>(p);
    r->h = trace::make_header(trace::RecordType::kThreadEnd, kSize);
    r->ticks = now_ticks();
    commit(t, kSize);
  }
  t.mode = kThreadReady;
}

void atfork_prepare() {
  pthread_mutex_lock(&g_start_mutex);
  pthread_mutex_lock(&g_meta_mutex);
  pthread_mutex_lock(&g_grow_mutex);
}

void atfork_parent() {
  pthread_mutex_unlock(&g_grow_mutex);
  pthread_mutex_unlock(&g_meta_mutex);
  pthread_mutex_unlock(&g_start_mutex);
}

// The child must never write into the parent's file: drop every mapping of it and start a
// file of its own at its first event. The forking thread is the child's only thread, so
// resetting its state resets every thread's.
void atfork_child() {
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
  memset(g_intern, 0, sizeof g_intern);
  g_next_string_id = 1;
  memset(&g_meta, 0, sizeof g_meta);
  uint32_t mode = t_state.mode;
  memset(&t_state, 0, sizeof t_state);
  if (mode == kThreadOff) t_state.mode = kThreadOff;
  reset_process_info_after_fork();
  fill_anchor(&g_process_start);
  faults_after_fork();
  mem_sample_after_fork();
  stacks_after_fork();
  pthread_mutex_init(&g_start_mutex, nullptr);
  pthread_mutex_init(&g_meta_mutex, nullptr);
  pthread_mutex_init(&g_grow_mutex, nullptr);
}

bool trace_is_ours() { return g_trace.hdr != nullptr && __atomic_load_n(&g_trace.started, __ATOMIC_ACQUIRE); }

// Async-signal-safe: only stores into the mapping, clock_gettime, sigaction and raise.
void fatal_signal_handler(int sig, siginfo_t* info, void* ucontext) {
  int saved_errno = errno;
  struct sigaction& old = g_old_actions[sig];
  bool old_is_handler = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != nullptr
                                                     : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
  if (old_is_handler) {
    // Someone else handled this signal before us (a runtime that uses SIGSEGV on purpose, a
    // crash reporter): let them decide; they may recover.
    if (old.sa_flags & SA_SIGINFO) {
      old.sa_sigaction(sig, info, ucontext);
    } else {
      old.sa_handler(sig);
    }
    errno = saved_errno;
    return;
  }
  if (trace_is_ours()) {
    ThreadState& t = t_state;
    if (t.mode != kThreadUnset && t.chunk != nullptr && t.pos + sizeof(trace::CrashRecord) <= trace::kChunkDataSize) {
      auto* r = reinterpret_cast<trace::CrashRecord*>(chunk_data(t.chunk) + t.pos);
      r->h = trace::make_header(trace::RecordType::kCrash, sizeof(trace::CrashRecord));
      r->signal = sig;
      r->api_in_flight = t.inflight_api;
      r->pad = 0;
      r->ticks = now_ticks();
      r->in_flight_start_ticks = t.inflight_start;
      commit(t, sizeof(trace::CrashRecord));
    }
    trace::FileHeader* hdr = g_trace.hdr;
    fill_anchor(&hdr->end);
    hdr->end_signal = sig;
    __atomic_store_n(&hdr->state, uint32_t(trace::FileState::kSignaled), __ATOMIC_RELEASE);
  }
  sigaction(sig, &old, nullptr);
  // A fault raised by an instruction happens again on return; any other signal is raised again
  // (delivered, with the old disposition, when the handler returns).
  bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
  if (info == nullptr || info->si_code <= 0 || !fault) raise(sig);
  errno = saved_errno;
  // A fault raised by an instruction happens again on return, now with the old disposition.
}

// Runs at exit (and in a forked child that exits). Events after this point are still recorded.
__attribute__((destructor)) void finalize_at_exit() {
  if (!trace_is_ours()) return;
  trace::FileHeader* hdr = g_trace.hdr;
  fill_anchor(&hdr->end);
  uint32_t expected = uint32_t(trace::FileState::kRecording);
  __atomic_compare_exchange_n(&hdr->state, &expected, uint32_t(trace::FileState::kExited), false,
                              __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  uint64_t dropped = __atomic_load_n(&hdr->stats[trace::kStatDroppedEvents], __ATOMIC_RELAXED);
  uint64_t missing = __atomic_load_n(&hdr->stats[trace::kStatMissingSymbols], __ATOMIC_RELAXED);
  if ((dropped != 0 || missing != 0) && !g_config.quiet) {
    fprintf(stderr, "cuprobe: %llu events dropped (trace size limit or full disk), %llu calls without a real function; trace: %s\n",
            (unsigned long long)dropped, (unsigned long long)missing, g_trace.path);
  }
}

// Makes CUPROBE_OUT absolute before the program can change directory, so that this process,
// its children and exec'd programs all write into the same run directory.
__attribute__((constructor)) void configure_at_load() {
  configure();
  const char* out = getenv("CUPROBE_OUT");
  if (out != nullptr && *out != 0 && out[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) {
      char abs[8192];
      snprintf(abs, sizeof abs, "%s/%s", cwd, out);
      setenv("CUPROBE_OUT", abs, 1);
      copy_str(g_config.out_dir, sizeof g_config.out_dir, abs);
    }
  }
}

// Claims the next chunk for `t`; false (and the thread's chunk unchanged) when none can be had.
bool next_chunk(ThreadState& t) {
  trace::ChunkHeader* c = claim_chunk(t.tid, t.seq);
  if (c == nullptr) return false;
  t.chunk = c;
  t.pos = 0;
  t.seq++;
  retarget_counts(t);
  return true;
}

void setup_state(ThreadState& t, uint32_t tid) {
  t.tid = tid;
  t.chunk = nullptr;
  t.pos = trace::kChunkDataSize;  // no room until a chunk is claimed
  t.counts = nullptr;
  t.seq = 0;
  t.device = -1;
  t.device_probed = 0;
  t.inflight_api = trace::kNoApi;
  next_chunk(t);
}

}  // namespace

bool tracing_on() { return configure() == kProcessOn; }

uint32_t thread_setup(ThreadState& t) {
  if (t.mode != kThreadUnset) return t.mode;
  if (configure() != kProcessOn || !ensure_started()) {
    t.mode = kThreadOff;
    return t.mode;
  }
  setup_state(t, uint32_t(syscall(SYS_gettid)));
  pthread_setspecific(g_thread_key, reinterpret_cast<void*>(1));
  t.mode = kThreadReady;
  return t.mode;
}

char* reserve_slow(ThreadState& t, uint32_t bytes) {
  if (bytes > trace::kChunkDataSize || !next_chunk(t)) {
    count_stat(trace::kStatDroppedEvents);
    return nullptr;
  }
  return chunk_data(t.chunk);
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

MetaWriter::MetaWriter() { pthread_mutex_lock(&g_meta_mutex); }
MetaWriter::~MetaWriter() { pthread_mutex_unlock(&g_meta_mutex); }
char* MetaWriter::reserve(uint32_t bytes) {
  if (g_meta.mode == kThreadUnset) {
    if (configure() != kProcessOn || !ensure_started()) return nullptr;
    setup_state(g_meta, trace::kMetaTid);
    g_meta.mode = kThreadReady;
  }
  return g_meta.mode == kThreadReady ? shim::reserve(g_meta, bytes) : nullptr;
}
void MetaWriter::commit(uint32_t bytes) { shim::commit(g_meta, bytes); }

uint32_t intern_string(const char* s) {
  if (s == nullptr) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  size_t len = 0;
  for (const char* p = s; *p; ++p, ++len) h = (h ^ uint8_t(*p)) * 1099511628211ull;
  if (h == 0) h = 1;
  if (len > 4000) len = 4000;
  MetaWriter w;
  uint32_t slot = uint32_t(h % kInternSlots);
  for (uint32_t probe = 0; probe < kInternSlots; ++probe, slot = (slot + 1) % kInternSlots) {
    if (g_intern[slot].hash == h) return g_intern[slot].id;
    if (g_intern[slot].hash == 0) break;
  }
  uint32_t id = g_next_string_id++;
  uint32_t size = trace::align8(uint32_t(sizeof(trace::StringRecord) + len));
  if (char* p = w.reserve(size)) {
    auto* r = reinterpret_cast<trace::StringRecord*>(p);
    r->h = trace::make_header(trace::RecordType::kString, size);
    r->id = id;
    r->len = uint32_t(len);
    memcpy(r->text, s, len);
    w.commit(size);
  }
  faults_on_new_string(id, s, len);
  if (g_intern[slot].hash == 0) g_intern[slot] = InternSlot{h, id};
  return id;
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


trace::FileHeader* trace_header() { return __atomic_load_n(&g_trace.hdr, __ATOMIC_ACQUIRE); }

uint64_t process_start_mono_ns() { return g_process_start.mono_ns; }

}  // namespace cuprobe::shim
