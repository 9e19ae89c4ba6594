#include "server/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

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

TEST(WorkQueue, PollingWorkersRunEveryTaskAndShutDownWithoutWaitingOutTheSpin) {
  std::atomic<int> ran{0};
  WorkQueue queue(3, 100, std::chrono::seconds(5));
  for (int i = 0; i < 200; ++i) {
    ASSERT_THAT(queue.Submit([&] { ran.fetch_add(1); }), IsOk());
    if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // idle gaps
  }
  while (ran.load() < 200) std::this_thread::yield();
  // A worker is polling now (for up to 5 s): shutdown must not wait for it.
  const auto start = std::chrono::steady_clock::now();
  queue.Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(ran.load(), 200);
  EXPECT_EQ(queue.admitted(), 0);
}

TEST(WorkQueue, RunHereRunsOnTheCallingThreadWithinTheAdmissionLimit) {
  WorkQueue queue(1, 2);
  std::thread::id ran_on;
  ASSERT_THAT(queue.RunHere([&] { ran_on = std::this_thread::get_id(); }), IsOk());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  // Two admitted and still running on a worker: a third is refused here as in Submit.
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ASSERT_THAT(queue.Submit([gate] { gate.wait(); }), IsOk());
  ASSERT_THAT(queue.Submit([gate] { gate.wait(); }), IsOk());
  bool ran = false;
  EXPECT_THAT(queue.RunHere([&] { ran = true; }), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_FALSE(ran);
  release.set_value();
  queue.Shutdown();
  EXPECT_THAT(queue.RunHere([] {}), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(WorkQueue, ShutdownWaitsForTasksRunningOnOtherThreads) {
  WorkQueue queue(1, 4);
  std::promise<void> started;
  std::atomic<bool> finished{false};
  std::thread caller([&] {
    (void)queue.RunHere([&] {
      started.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      finished = true;
    });
  });
  started.get_future().wait();
  queue.Shutdown();
  EXPECT_TRUE(finished.load());
  caller.join();
}

}  // namespace
}  // namespace cuimg
