// The shim's mutexes and the one order in which a thread may take them.
//
// Every mutex of the shim is a line of CUPROBE_SHIM_LOCKS, and its place in the list is its
// rank: a thread that holds a lock may take only locks further down the list. The mutexes
// themselves live in one array (lock_order.cpp) and are taken through shim_lock / ShimLock
// naming the rank, so that no mutex can exist without a rank (tests/tools/check_lock_ranks.py
// fails on a pthread mutex declared anywhere else in shim/).
//
// Why this order: a stack capture writes its stack and module records through the meta writer
// (stacks → meta); the meta writer's first reservation may create the trace file (meta → start:
// MetaWriter::reserve calls ensure_started); any reservation may claim a chunk from the flight
// recorder's ring, and claiming one may map more of the file (meta → ring → grow). The alerts'
// and the memory cap's mutexes are leaves: nothing is taken under them. One lock outside the list
// sits between stacks and meta: the dynamic loader's, which refresh_modules holds (inside
// dl_iterate_phdr) while it writes module records; so nothing may call into the loader (dlopen,
// dlsym, dladdr, dl_iterate_phdr, a first backtrace) while holding the meta lock or a later one.
//
// Fork: atfork_prepare takes the locks marked kHeldAcrossFork in rank order and atfork_parent
// releases them, so that the child inherits the file, the meta writer and the ring consistent;
// the child re-initializes every mutex. The others (kResetInChild) are not waited for: their
// module throws the data they guard away in the child (fork.h), and fork does not wait for a
// stack capture or an alert being written.
//
// Check builds (CUPROBE_LOCK_ORDER_CHECK=1: builds without NDEBUG, the sanitizer builds, and
// -DCUPROBE_LOCK_ORDER_CHECK=ON, for which CMake defines it) keep a per-thread bit set of the ranks
// held and abort with a message naming both locks when a thread takes a lock at or above a rank it
// holds. Elsewhere shim_lock is pthread_mutex_lock and nothing more.
#pragma once

#include <pthread.h>
#include <stdint.h>

#ifndef CUPROBE_LOCK_ORDER_CHECK
#ifdef NDEBUG
#define CUPROBE_LOCK_ORDER_CHECK 0
#else
#define CUPROBE_LOCK_ORDER_CHECK 1
#endif
#endif

// X(rank, fork, what it guards), in rank order: a thread holding a lock may take only locks listed after it.
#define CUPROBE_SHIM_LOCKS(X)                                                                                  \
  X(kStacks, kResetInChild, "stacks.cpp: adding to the stack table; the module map")                          \
  X(kMeta, kHeldAcrossFork, "recorder_meta.cpp: the meta writer (process-wide records), new interned strings") \
  X(kStart, kHeldAcrossFork, "recorder_file.cpp: creating the trace file")                                    \
  X(kRing, kHeldAcrossFork, "recorder_file.cpp: the flight recorder's ring of chunks")                         \
  X(kGrow, kHeldAcrossFork, "recorder_file.cpp: mapping more of the trace file")                               \
  X(kAlerts, kResetInChild, "alerts.cpp: the alert lines' pacing and the new-problem counters")                \
  X(kCapTable, kResetInChild, "faults.cpp: the memory cap's table of live allocations")

namespace cuprobe::shim {

enum class LockRank : uint8_t {
#define CUPROBE_LOCK_RANK(rank, fork, what) rank,
  CUPROBE_SHIM_LOCKS(CUPROBE_LOCK_RANK)
#undef CUPROBE_LOCK_RANK
      kCount
};
inline constexpr int kLockCount = int(LockRank::kCount);
static_assert(kLockCount <= 32, "the held ranks are one 32-bit word per thread");

enum ForkPolicy : uint8_t {
  kHeldAcrossFork,  // taken by atfork_prepare: the child inherits what it guards intact
  kResetInChild,    // not waited for: the module forgets what it guards in the child
};

struct LockInfo {
  const char* name;
  ForkPolicy fork;
  const char* guards;
};
inline constexpr LockInfo kLocks[] = {
#define CUPROBE_LOCK_INFO(rank, fork, what) LockInfo{#rank, fork, what},
    CUPROBE_SHIM_LOCKS(CUPROBE_LOCK_INFO)
#undef CUPROBE_LOCK_INFO
};

extern pthread_mutex_t g_shim_mutexes[kLockCount];

// The checker, compiled in every build (the check build calls it from shim_lock; tests call it
// directly). Notes that the calling thread takes lock `r`; false, noting nothing, when it already
// holds `r` or a lock of a later rank (the order is broken).
bool lock_order_acquire(LockRank r);
void lock_order_release(LockRank r);
uint32_t lock_order_held();  // the calling thread's held ranks, bit r for rank r
// Says which lock was taken while holding which (write(2) to standard error) and aborts.
[[noreturn]] void lock_order_violation(LockRank wanted);

inline void shim_lock(LockRank r) {
#if CUPROBE_LOCK_ORDER_CHECK
  if (!lock_order_acquire(r)) lock_order_violation(r);
#endif
  pthread_mutex_lock(&g_shim_mutexes[int(r)]);
}

inline void shim_unlock(LockRank r) {
  pthread_mutex_unlock(&g_shim_mutexes[int(r)]);
#if CUPROBE_LOCK_ORDER_CHECK
  lock_order_release(r);
#endif
}

// Holds the lock of rank `r` for its scope.
class ShimLock {
 public:
  explicit ShimLock(LockRank r) : rank_(r) { shim_lock(r); }
  ~ShimLock() { shim_unlock(rank_); }
  ShimLock(const ShimLock&) = delete;
  ShimLock& operator=(const ShimLock&) = delete;

 private:
  LockRank rank_;
};

// atfork_prepare / atfork_parent (recorder_lifecycle.cpp): the kHeldAcrossFork locks, taken in rank
// order, released in reverse. The child's reset (lock_order.cpp) re-initializes every mutex.
void lock_all_for_fork();
void unlock_all_after_fork();

}  // namespace cuprobe::shim
