// The shim's one lock order (shim/lock_order.h) and its fork-child resets (shim/fork.h): the
// checker refuses a lock taken at or below a rank the thread holds, a check build aborts on one
// with both locks named, and a forked child runs every registered reset, the locks' included.
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "fork.h"
#include "lock_order.h"
#include "recorder.h"

namespace cuprobe::shim {
namespace {

TEST(ShimLockOrder, TheCheckerCatchesAnInversion) {
  ASSERT_EQ(lock_order_held(), 0u);
  EXPECT_TRUE(lock_order_acquire(LockRank::kRing));
  EXPECT_FALSE(lock_order_acquire(LockRank::kMeta)) << "the meta lock comes before the ring's";
  EXPECT_FALSE(lock_order_acquire(LockRank::kRing)) << "the same lock twice";
  EXPECT_TRUE(lock_order_acquire(LockRank::kGrow));
  EXPECT_EQ(lock_order_held(), (1u << int(LockRank::kRing)) | (1u << int(LockRank::kGrow)));
  lock_order_release(LockRank::kGrow);
  lock_order_release(LockRank::kRing);
  EXPECT_EQ(lock_order_held(), 0u);
}

// What the shim nests (lock_order.h): a stack capture writes through the meta writer, whose first
// reservation may create the file, and a reservation claims from the ring, which may grow the file.
TEST(ShimLockOrder, TheShimsOwnNestingsAreInOrder) {
  const LockRank nest[] = {LockRank::kStacks, LockRank::kMeta, LockRank::kStart, LockRank::kRing, LockRank::kGrow};
  for (LockRank r : nest) EXPECT_TRUE(lock_order_acquire(r)) << kLocks[int(r)].name;
  for (LockRank r : nest) lock_order_release(r);
  EXPECT_EQ(lock_order_held(), 0u);
}

TEST(ShimLockOrder, EveryLockHasANameAndSaysWhatItGuards) {
  for (const LockInfo& l : kLocks) {
    EXPECT_EQ(l.name[0], 'k');
    EXPECT_NE(std::string(l.guards).find(".cpp: "), std::string::npos) << l.name;
  }
  EXPECT_EQ(sizeof kLocks / sizeof kLocks[0], size_t(kLockCount));
}

#if CUPROBE_LOCK_ORDER_CHECK
TEST(ShimLockOrder, ACheckBuildAbortsOnAnInversion) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ShimLock ring(LockRank::kRing);
        ShimLock meta(LockRank::kMeta);
      },
      "lock order broken: taking kMeta while holding kRing");
}
#endif

int g_test_resets = 0;
void test_reset() { ++g_test_resets; }
CUPROBE_FORK_CHILD_RESET(test_reset);

TEST(ForkChildResets, AForkedChildRunsEveryRegisteredReset) {
  tracing_on();  // configures the shim in this process (CUPROBE_DISABLE=1: no trace), which installs its fork handlers
  ASSERT_GE(fork_child_reset_count(), 2) << "this file's and the locks' at least";
  // As if the forking thread held a lock of the shim: the child's only thread holds none.
  ASSERT_TRUE(lock_order_acquire(LockRank::kStacks));
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0;
    if (g_test_resets != 1) bad |= 1;
    if (lock_order_held() != 0) bad |= 2;
    _exit(bad);
  }
  lock_order_release(LockRank::kStacks);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: this file's reset did not run exactly once; 2: the child holds a lock";
  EXPECT_EQ(g_test_resets, 0) << "resets run only in the child";
}

}  // namespace
}  // namespace cuprobe::shim
