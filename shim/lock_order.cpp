// The shim's mutexes and their order checker: see lock_order.h.
#include "lock_order.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fork.h"

namespace cuprobe::shim {

pthread_mutex_t g_shim_mutexes[kLockCount] = {
#define CUPROBE_LOCK_INIT(rank, fork, what) PTHREAD_MUTEX_INITIALIZER,
    CUPROBE_SHIM_LOCKS(CUPROBE_LOCK_INIT)
#undef CUPROBE_LOCK_INIT
};

namespace {

// Bit r: the thread holds the lock of rank r. Plain initial-exec TLS, like the recorder's state.
__thread uint32_t t_held __attribute__((tls_model("initial-exec")));

// In the child, in its only thread: the locks atfork_prepare took are held by the forking thread
// and the others may have been held by threads that do not exist here. Every mutex starts again
// unlocked, and the thread holds none.
void locks_after_fork() {
  for (pthread_mutex_t& m : g_shim_mutexes) pthread_mutex_init(&m, nullptr);
  t_held = 0;
}
CUPROBE_FORK_CHILD_RESET(locks_after_fork);

}  // namespace

bool lock_order_acquire(LockRank r) {
  uint32_t held = t_held;
  if ((held >> unsigned(r)) != 0) return false;
  t_held = held | (1u << unsigned(r));
  return true;
}

void lock_order_release(LockRank r) { t_held &= ~(1u << unsigned(r)); }

uint32_t lock_order_held() { return t_held; }

void lock_order_violation(LockRank wanted) {
  uint32_t held = t_held;
  int highest = held == 0 ? int(wanted) : 31 - __builtin_clz(held);
  char line[256];
  int n = snprintf(line, sizeof line,
                   "cuprobe: lock order broken: taking %s while holding %s (shim/lock_order.h); aborting\n",
                   kLocks[int(wanted)].name, kLocks[highest].name);
  if (n > 0) (void)!write(STDERR_FILENO, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
  abort();
}

void lock_all_for_fork() {
  for (int r = 0; r < kLockCount; ++r) {
    if (kLocks[r].fork == kHeldAcrossFork) shim_lock(LockRank(r));
  }
}

void unlock_all_after_fork() {
  for (int r = kLockCount - 1; r >= 0; --r) {
    if (kLocks[r].fork == kHeldAcrossFork) shim_unlock(LockRank(r));
  }
}

}  // namespace cuprobe::shim
