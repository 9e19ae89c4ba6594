// The lock-order switch: off, locks may be taken in any order; on (Debian's default), an order
// that contradicts an earlier one stops the process.
#include "cuimg/common/lock_order_checks.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "absl/synchronization/mutex.h"

namespace cuimg {
namespace {

// a then b, then b then a: a cycle in the lock graph, though one thread cannot deadlock itself.
void LockInBothOrders() {
  absl::Mutex a, b;
  {
    absl::MutexLock hold_a(&a);
    absl::MutexLock hold_b(&b);
  }
  {
    absl::MutexLock hold_b(&b);
    absl::MutexLock hold_a(&a);
  }
}

TEST(LockOrderChecksDeathTest, OnStopsAnInconsistentOrder) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        SetLockOrderChecks(true);
        LockInBothOrders();
      },
      "deadlock");
}

// The same orders with the checks off: the child process exits normally (with them on it dies,
// as the test above shows), and this process's setting is left alone.
TEST(LockOrderChecksDeathTest, OffLetsEitherOrderPass) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        SetLockOrderChecks(false);
        LockInBothOrders();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace cuimg
