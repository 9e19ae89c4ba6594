#include "server/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;

TEST(WorkQueue, RunsEveryAdmittedTaskBeforeShutdownReturns) {
  std::atomic<int> ran{0};
  WorkQueue queue(3, 100);
  for (int i = 0; i < 50; ++i) ASSERT_THAT(queue.Submit([&] { ran.fetch_add(1); }), IsOk());
  queue.Shutdown();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_THAT(queue.Submit([] {}), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(WorkQueue, RefusesBeyondTheAdmissionLimit) {
  WorkQueue queue(1, 2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ASSERT_THAT(queue.Submit([gate] { gate.wait(); }), IsOk());
  ASSERT_THAT(queue.Submit([gate] { gate.wait(); }), IsOk());
  EXPECT_THAT(queue.Submit([] {}), StatusIs(absl::StatusCode::kResourceExhausted));
  release.set_value();
  queue.Shutdown();
  EXPECT_EQ(queue.admitted(), 0);
}

}  // namespace
}  // namespace cuimg
