// Live alerts: see alerts.h. Everything here runs on rare events (a failed allocation, an
// injected fault, a cuDNN problem seen for the first time), under one lock that nothing on a hot
// path takes; a line is formatted on the stack and written with one write(2).
//
// The storm rule, checked at each new problem: at least CUPROBE_ALERTS_STORM_S seconds (default
// 20) since the process's first cuDNN problem, and at least CUPROBE_ALERTS_STORM_NEW new problems
// (default 20) in the last half of that time, making at least a quarter of all its problems. A
// job that searched its shapes once (a fixed-shape network, a few buckets, a last partial batch)
// has none left to find in the second half of its time; one whose shapes keep changing finds new
// ones all along. It is the analyzer's research-storm judgement (searches still arriving in the
// last half) made live, without the search bookkeeping the analyzer does afterwards. Until a job
// with a few shape buckets has seen each of them, it looks exactly like a storm (every step a new
// shape): the 20 s are there so that such a warm-up ends first (8 buckets of a small conv net on
// an H200 took 10 s, docs/dev/validation.md); one that takes longer gets the alert, which says what it
// saw, and the analysis afterwards names the pattern. While new problems keep coming the alert
// repeats every minute with its counts.
#include "alerts.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "env_config.h"
#include "fault_plan.h"
#include "faults.h"
#include "fork.h"
#include "lock_order.h"
#include "process_info.h"
#include "recorder.h"
#include "safe_files.h"
#include "search_budget.h"

namespace cuprobe::shim {

namespace {

enum Kind { kOom, kAllocFailed, kFault, kStorm, kKinds };
// A kind speaks at most once in this many seconds; what it had to say meanwhile is counted and
// told with its next line. A process writes at most kMaxLines lines.
constexpr uint64_t kQuietNs[kKinds] = {10'000'000'000ull, 10'000'000'000ull, 10'000'000'000ull, 60'000'000'000ull};
constexpr int kMaxLines = 50;

bool g_on = true;
int g_fd = 2;
char g_file[4096];  // file:PATH, opened at the first line
char g_out_dir[4096];
uint64_t g_last_ns[kKinds];
uint64_t g_held[kKinds];  // events not told since the kind's last line
int g_lines;
char g_host[64];

// The storm: when the first problem came, and the last kRing new problems' times.
constexpr int kRing = 4096;
uint64_t g_storm_after_ns = 20'000'000'000ull;
uint64_t g_storm_min_new = 20;
uint64_t g_first_problem_ns;
uint64_t g_problems;
uint64_t g_problem_ns[kRing];

// "rank 1 (pid 4242 on host node3)", or "pid 4242 on host node3" without a rank.
void who(char* buf, size_t n) {
  int rank = process_rank();
  if (rank >= 0)
    snprintf(buf, n, "rank %d (pid %d on host %s)", rank, int(getpid()), g_host);
  else
    snprintf(buf, n, "pid %d on host %s", int(getpid()), g_host);
}

void write_line(const char* line, size_t len) {
  if (g_fd < 0 && g_file[0]) {
    // Never through a link, never blocking (a FIFO is refused), only into a directory no other
    // user can change (common/safe_files.h): the job may run as root in a shared directory.
    files::Why why;
    g_fd = files::open_append(g_file, &why);
    if (g_fd < 0) {
      // Said once, on standard error, and alerts go there from now on.
      char msg[800];
      int m = snprintf(msg, sizeof msg, "cuprobe: cannot write alerts to a file: %s; writing them here\n", why.text);
      g_file[0] = 0;
      g_fd = 2;
      if (m > 0) (void)!::write(2, msg, size_t(m) < sizeof msg ? size_t(m) : sizeof msg - 1);
    }
  }
  while (len > 0) {
    ssize_t w = ::write(g_fd, line, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    line += w;
    len -= size_t(w);
  }
}

// Formats "cuprobe alert: WHO: TEXT[ (N more since ...)]. Trace: DIR" and writes it, unless the
// kind spoke less than its quiet time ago (then the event is held and counted).
void emit(Kind kind, const char* text) {
  uint64_t now = mono_ns();
  shim_lock(LockRank::kAlerts);
  bool speak = g_on && g_lines < kMaxLines && (g_last_ns[kind] == 0 || now - g_last_ns[kind] >= kQuietNs[kind]);
  if (!speak) {
    ++g_held[kind];
    shim_unlock(LockRank::kAlerts);
    return;
  }
  char id[160], held[96] = "";
  who(id, sizeof id);
  if (g_held[kind] > 0) {
    snprintf(held, sizeof held, " (and %llu more like it since the last alert)",
             static_cast<unsigned long long>(g_held[kind]));
  }
  char line[1024];
  int n = snprintf(line, sizeof line, "cuprobe alert: %s: %s%s. Trace: %s (cuprobe analyze %s)\n", id, text, held,
                   g_out_dir, g_out_dir);
  if (n > 0) {
    size_t len = size_t(n) < sizeof line ? size_t(n) : sizeof line - 1;
    if (size_t(n) >= sizeof line) line[len - 1] = '\n';
    write_line(line, len);
  }
  g_last_ns[kind] = now;
  g_held[kind] = 0;
  ++g_lines;
  shim_unlock(LockRank::kAlerts);
}

// "20.00 GiB", "512.0 MiB", "4096 bytes".
void bytes_text(uint64_t b, char* buf, size_t n) {
  if (b >= (1ull << 30))
    snprintf(buf, n, "%.2f GiB", double(b) / double(1ull << 30));
  else if (b >= (1ull << 20))
    snprintf(buf, n, "%.1f MiB", double(b) / double(1ull << 20));
  else
    snprintf(buf, n, "%llu bytes", static_cast<unsigned long long>(b));
}

}  // namespace

void alerts_configure() {
  const char* v = env_value(env::Id::kAlerts);
  g_on = true;
  g_fd = 2;
  g_file[0] = 0;
  if (v != nullptr && (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)) {
    g_on = false;
  } else if (v != nullptr && strncmp(v, "file:", 5) == 0) {
    snprintf(g_file, sizeof g_file, "%s", v + 5);
    g_fd = -1;
  }
  const char* out = env_value(env::Id::kOut);
  snprintf(g_out_dir, sizeof g_out_dir, "%s", out ? out : "cuprobe-trace");
  if (gethostname(g_host, sizeof g_host) != 0) snprintf(g_host, sizeof g_host, "?");
  g_host[sizeof g_host - 1] = 0;
  g_storm_after_ns = env_number(env::Id::kAlertsStormS) * 1'000'000'000ull;
  g_storm_min_new = env_number(env::Id::kAlertsStormNew);
  if (g_storm_min_new == 0) g_storm_min_new = 1;
}

namespace {

// The child's alerts are its own: nothing held, no problem seen yet (its problem table is new).
void alerts_after_fork() {
  memset(g_last_ns, 0, sizeof g_last_ns);
  memset(g_held, 0, sizeof g_held);
  g_lines = 0;
  g_first_problem_ns = 0;
  g_problems = 0;
}
CUPROBE_FORK_CHILD_RESET(alerts_after_fork);

}  // namespace

void alert_torch_oom(int64_t size, uint64_t total_allocated, uint64_t total_reserved, int device) {
  char req[32], alloc[32], reserved[32], text[512];
  bytes_text(uint64_t(size < 0 ? 0 : size), req, sizeof req);
  bytes_text(total_allocated, alloc, sizeof alloc);
  bytes_text(total_reserved, reserved, sizeof reserved);
  snprintf(text, sizeof text,
           "out of memory on cuda:%d: PyTorch could not allocate %s (%s allocated by tensors, %s reserved by its "
           "caching allocator)",
           device, req, alloc, reserved);
  emit(kOom, text);
}

void alert_allocation_failed(ApiId api, uint64_t size, int device, int code) {
  char req[32], text[512];
  bytes_text(size, req, sizeof req);
  // 2 is out of memory for both the runtime (cudaErrorMemoryAllocation) and the driver
  // (CUDA_ERROR_OUT_OF_MEMORY).
  char why[48];
  if (code == 2)
    snprintf(why, sizeof why, "out of memory");
  else
    snprintf(why, sizeof why, "error %d", code);
  snprintf(text, sizeof text, "%s of %s failed on device %d (%s); the application may still free memory and retry",
           api_static(api).name, req, device, why);
  emit(kAllocFailed, text);
}

void alert_fault_injected(ApiId api, const FaultHit& hit) {
  char text[512];
  if (hit.code == 0) {
    snprintf(text, sizeof text, "fault mode: rule '%s' made %s wait %.3f s (match %llu of the rule)",
             fault_rule_name(hit.rule), api_static(api).name, double(hit.delay_ns) / 1e9,
             static_cast<unsigned long long>(hit.k));
    emit(kFault, text);
    return;
  }
  const char* name = faults::error_name(api_static(api).library, hit.code);
  snprintf(text, sizeof text, "fault mode: rule '%s' made %s fail with %d%s%s%s (match %llu of the rule)",
           fault_rule_name(hit.rule), api_static(api).name, int(hit.code), name ? " (" : "", name ? name : "",
           name ? ")" : "", static_cast<unsigned long long>(hit.k));
  emit(kFault, text);
}

void alert_new_problem() {
  uint64_t now = mono_ns();
  shim_lock(LockRank::kAlerts);
  if (g_problems == 0) g_first_problem_ns = now;
  g_problem_ns[g_problems % kRing] = now;
  uint64_t total = ++g_problems;
  uint64_t since = now - g_first_problem_ns;
  uint64_t late = 0;
  bool storm = false;
  if (g_on && since >= g_storm_after_ns) {
    uint64_t half = g_first_problem_ns + since / 2;
    uint64_t known = total < kRing ? total : kRing;
    for (uint64_t k = 0; k < known && g_problem_ns[(total - 1 - k) % kRing] >= half; ++k) ++late;
    storm = late >= g_storm_min_new && late * 4 >= total;
  }
  shim_unlock(LockRank::kAlerts);
  if (!storm) return;
  // The cure that needs no code change, or that it is already at work (search_budget.h).
  const char* cure = g_budget_on ? "; the search budget in force gives new problems past it cuDNN's heuristic plan"
                                 : "; cuprobe record --search-budget 5% keeps searches within 5% of the job's time";
  char text[640];
  snprintf(text, sizeof text,
           "new cuDNN problems keep arriving: %llu of %llu in the last %.*f s of the %.*f s since the first (input "
           "shapes, or a batch dimension such as a count of proposals, still changing; with cudnn.benchmark on each is "
           "a new search: a re-search storm if it goes on%s)",
           static_cast<unsigned long long>(late), static_cast<unsigned long long>(total),
           since < 20'000'000'000ull ? 1 : 0, double(since) / 2e9, since < 20'000'000'000ull ? 1 : 0,
           double(since) / 1e9, cure);
  emit(kStorm, text);
}

}  // namespace cuprobe::shim
