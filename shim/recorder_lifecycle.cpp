// The shim's life in a process: configuration from the environment when it is loaded, each
// thread's set-up and end, fork (the child writes a file of its own), exec (the file left
// behind is marked as such), normal exit and fatal or ending signals (the file says how the
// process ended). See recorder.h for the contract.
#include "recorder_internal.h"

#include "faults.h"
#include "plan_pins.h"
#include "alerts.h"
#include "mem_sample.h"
#include "problem_table.h"
#include "stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "keep_spec.h"
#include "process_info.h"

namespace cuprobe::shim {

__thread ThreadState t_state __attribute__((tls_model("initial-exec")));
bool g_launch_events = false;
Config g_config;

namespace {

constexpr uint64_t kDefaultMaxBytes = 4096ull << 20;
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
// Signals that end a process by default when nothing handles them (torchrun stopping its
// workers, a scheduler's SIGTERM, Ctrl-C in a program that does not catch it): the trace then
// says which signal ended the process instead of looking as if it had been SIGKILLed. Handled
// only while their disposition is the default: a handler the program installs replaces ours,
// and an ignored signal stays ignored.
constexpr int kEndSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
constexpr int kMaxSignal = 65;

uint32_t g_process_mode = kProcessUnconfigured;
pthread_once_t g_config_once = PTHREAD_ONCE_INIT;
pthread_key_t g_thread_key;
struct sigaction g_old_actions[kMaxSignal];

// ---- Configuration from the environment ----------------------------------------------------
// A value the shim cannot read is never half-read (strtoull of "-1" or "1MiB"): it is reported
// once on stderr and removed from this process's environment, so that the rest of the shim
// (stacks.cpp and mem_sample.cpp read their own variables after this) and every program this
// one runs take the default, and a job says it once rather than once per process. `cuprobe
// record` refuses the same values before the job starts: cli/cmds/record.cpp
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

void on_thread_exit(void*);
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
  g_config.keep = trace::KeepMode::kAuto;
  g_config.ring_bytes = 0;
  if (const char* keep = getenv("CUPROBE_KEEP"); keep != nullptr && *keep != 0) {
    if (!parse_keep(keep, &g_config.keep, &g_config.ring_bytes)) {
      warn_env("CUPROBE_KEEP", keep, kKeepExpected, "the default, auto");
      g_config.keep = trace::KeepMode::kAuto;
    }
  }
  g_config.delay_ns =
      env_number("CUPROBE_DELAY_S", 0, kMaxWindowSeconds, 0, CUPROBE_WINDOW_SECONDS_TEXT, "no delay") * 1000000000ull;
  g_config.duration_ns = env_number("CUPROBE_DURATION_S", 1, kMaxWindowSeconds, 0,
                                    CUPROBE_WINDOW_SECONDS_TEXT ", from 1", "no end") *
                         1000000000ull;
  nvtx_window_configure();
  g_launch_events = env_bool("CUPROBE_LAUNCH_EVENTS");
  static const char* const kClocks[] = {"auto", "monotonic", "tsc", "counter", nullptr};
  const char* clock = env_word("CUPROBE_CLOCK", kClocks, "auto, monotonic or tsc", "auto");
  clock_init(clock != nullptr && strcmp(clock, "auto") != 0 ? clock : nullptr);
  check_other_variables();
  fill_anchor(&g_process_start);
  faults_configure();
  pins_configure();
  alerts_configure();
  mem_sample_configure();
  stacks_configure();
  pthread_key_create(&g_thread_key, on_thread_exit);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  uint32_t m = env_bool("CUPROBE_DISABLE") ? kProcessOff : kProcessOn;
  __atomic_store_n(&g_process_mode, m, __ATOMIC_RELEASE);
}

}  // namespace

uint32_t configure() {
  pthread_once(&g_config_once, do_configure);
  return __atomic_load_n(&g_process_mode, __ATOMIC_ACQUIRE);
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

namespace {

void fatal_signal_handler(int sig, siginfo_t* info, void* ucontext);

void install_signal_handler(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fatal_signal_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &g_old_actions[sig]);
}

}  // namespace

void install_signal_handlers() {
  for (int sig : kFatalSignals) install_signal_handler(sig);
  for (int sig : kEndSignals) {
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
    install_signal_handler(sig);
  }
}

namespace {

void on_thread_exit(void*) {
  ThreadState& t = t_state;
  if (t.mode != kThreadReady || t.chunk == nullptr) return;
  t.mode = kThreadBusy;
  constexpr uint32_t kSize = sizeof(trace::ThreadEnd);
  if (char* p = reserve_kept(t, kSize)) {
    auto* r = reinterpret_cast<trace::ThreadEnd*>(p);
    r->h = trace::make_header(trace::RecordType::kThreadEnd, kSize);
    r->ticks = now_ticks();
    commit_kept(t, kSize);
  }
  flush_window_skipped(t);
  seal_thread_chunk(t);
  t.mode = kThreadReady;
}

void atfork_prepare() {
  pthread_mutex_lock(&g_start_mutex);
  pthread_mutex_lock(&g_meta_mutex);
  pthread_mutex_lock(&g_ring_mutex);
  pthread_mutex_lock(&g_grow_mutex);
}

void atfork_parent() {
  pthread_mutex_unlock(&g_grow_mutex);
  pthread_mutex_unlock(&g_ring_mutex);
  pthread_mutex_unlock(&g_meta_mutex);
  pthread_mutex_unlock(&g_start_mutex);
}

// The child must never write into the parent's file: drop every mapping of it and start a
// file of its own at its first event. The forking thread is the child's only thread, so
// resetting its state resets every thread's.
void atfork_child() {
  trace_file_after_fork();
  meta_after_fork();
  uint32_t mode = t_state.mode;
  memset(&t_state, 0, sizeof t_state);
  if (mode == kThreadOff) t_state.mode = kThreadOff;
  reset_process_info_after_fork();
  fill_anchor(&g_process_start);
  faults_after_fork();
  alerts_after_fork();
  mem_sample_after_fork();
  stacks_after_fork();
  problems_after_fork();
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
    // In the kept stream when the thread has one with room (a ring chunk could still be
    // overwritten while other threads run on), else in the thread's chunk.
    bool kept = t.split && t.kchunk != nullptr && t.kpos + sizeof(trace::CrashRecord) <= trace::kChunkDataSize;
    if (kept || (t.mode != kThreadUnset && t.chunk != nullptr && t.pos + sizeof(trace::CrashRecord) <= trace::kChunkDataSize)) {
      auto* r = reinterpret_cast<trace::CrashRecord*>(kept ? chunk_data(t.kchunk) + t.kpos : chunk_data(t.chunk) + t.pos);
      r->h = trace::make_header(trace::RecordType::kCrash, sizeof(trace::CrashRecord));
      r->signal = sig;
      r->api_in_flight = t.inflight_api;
      r->pad = 0;
      r->ticks = now_ticks();
      r->in_flight_start_ticks = t.inflight_start;
      commit_kept(t, sizeof(trace::CrashRecord));
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
  flush_window_skipped(t_state);  // the exiting thread's; other threads add theirs as they end
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

}  // namespace cuprobe::shim
