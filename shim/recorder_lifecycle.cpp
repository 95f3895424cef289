// The shim's life in a process: configuration from the environment when it is loaded, each
// thread's set-up and end, fork (the child writes a file of its own), exec (the file left
// behind is marked as such), normal exit and fatal or ending signals (the file says how the
// process ended). See recorder.h for the contract.
#include "recorder_internal.h"

#include "alerts.h"
#include "faults.h"
#include "fork.h"
#include "lock_order.h"
#include "mem_sample.h"
#include "plan_pins.h"
#include "search_budget.h"
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
#include "env_config.h"
#include "keep_spec.h"
#include "process_info.h"

namespace cuprobe::shim {

__thread ThreadState t_state __attribute__((tls_model("initial-exec")));
bool g_launch_events = false;
Config g_config;

namespace {

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
// Each variable is read through its entry in common/env_vars.h (env_config.h): a value the shim
// does not take is reported once and removed, and the default is used. `cuprobe record` refuses
// the same values before the job starts, with the same entries.

// Variables that other parts of the shim read after do_configure, checked here first so that
// their warnings come in this order (a bad one is removed, so those parts see none).
void check_other_variables() {
  static constexpr env::Id kLater[] = {env::Id::kStacks, env::Id::kStackDepth, env::Id::kStackMinBytes,
                                       env::Id::kMemSampleMs};
  for (env::Id id : kLater) env_value(id);
}

void on_thread_exit(void*);
void atfork_prepare();
void atfork_parent();
void atfork_child();

void do_configure() {
  const char* out = env_value(env::Id::kOut);
  copy_str(g_config.out_dir, sizeof g_config.out_dir, out ? out : "cuprobe-trace");
  // Quiet first: it decides whether the others may warn.
  g_config.quiet = env_flag(env::Id::kQuiet);
  // A limit past what a trace can hold (see start_trace_locked) is simply that much.
  uint64_t max_mb = env_number(env::Id::kMaxMb);
  g_config.max_bytes = max_mb > (UINT64_MAX >> 20) ? UINT64_MAX : max_mb << 20;
  g_config.keep = trace::KeepMode::kAuto;
  g_config.ring_bytes = 0;
  if (const char* keep = env_value(env::Id::kKeep)) parse_keep(keep, &g_config.keep, &g_config.ring_bytes);
  g_config.delay_ns = env_number(env::Id::kDelayS) * 1000000000ull;
  g_config.duration_ns = env_number(env::Id::kDurationS) * 1000000000ull;
  nvtx_window_configure();
  g_launch_events = env_flag(env::Id::kLaunchEvents);
  const char* clock = env_value(env::Id::kClock);
  clock_init(clock != nullptr && strcmp(clock, "auto") != 0 ? clock : nullptr);
  check_other_variables();
  fill_anchor(&g_process_start);
  faults_configure();
  pins_configure();
  budget_configure();
  if (g_budget_on) g_steer_on = true;
  alerts_configure();
  mem_sample_configure();
  stacks_configure();
  pthread_key_create(&g_thread_key, on_thread_exit);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  uint32_t m = env_flag(env::Id::kDisable) ? kProcessOff : kProcessOn;
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

// The locks whose data the child keeps (the file, the meta writer, the ring), in the one order of
// lock_order.h, so that no other thread is half-way through changing it when the process forks.
void atfork_prepare() { lock_all_for_fork(); }

void atfork_parent() { unlock_all_after_fork(); }

// The child must never write into the parent's file, nor name the parent's interned strings,
// problems or stacks: every module that keeps such state forgets it (fork.h: the recorder's file
// and meta writer, the locks, and each module's own registered reset, among them the one below),
// and the child starts a file of its own at its first event.
void atfork_child() { run_fork_child_resets(); }

// The forking thread is the child's only thread, so resetting its state resets every thread's.
// The child traces from now on: its start anchor is the fork.
void thread_state_after_fork() {
  uint32_t mode = t_state.mode;
  memset(&t_state, 0, sizeof t_state);
  if (mode == kThreadOff) t_state.mode = kThreadOff;
  fill_anchor(&g_process_start);
}
CUPROBE_FORK_CHILD_RESET(thread_state_after_fork);

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

// Runs at exit (and in a forked child that exits). Events after this point are still recorded in
// the chunks their threads hold; the file is cut to the chunks handed out (trim_trace_file).
__attribute__((destructor)) void finalize_at_exit() {
  if (!trace_is_ours()) return;
  trace::FileHeader* hdr = g_trace.hdr;
  flush_window_skipped(t_state);  // the exiting thread's; other threads add theirs as they end
  fill_anchor(&hdr->end);
  uint32_t expected = uint32_t(trace::FileState::kRecording);
  __atomic_compare_exchange_n(&hdr->state, &expected, uint32_t(trace::FileState::kExited), false,
                              __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  trim_trace_file();
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
