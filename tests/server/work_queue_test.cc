#include "server/scheduling/work_queue.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

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
  EXPECT_THAT(queue.CheckRoom(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(ErrorReasonOf(queue.CheckRoom()), "SHUTTING_DOWN");
}

TEST(WorkQueue, RefusesBeyondTheAdmissionLimit) {
  WorkQueue queue(1, 2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ASSERT_THAT(queue.Submit([gate] { gate.wait(); }), IsOk());
  EXPECT_THAT(queue.CheckRoom(), IsOk());
  ASSERT_THAT(queue.Submit([gate] { gate.wait(); }), IsOk());
  EXPECT_THAT(queue.CheckRoom(), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(queue.Submit([] {}), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(ErrorReasonOf(queue.CheckRoom()), "OVERLOADED");
  release.set_value();
  queue.Shutdown();
  EXPECT_EQ(queue.admitted(), 0);
}

TEST(WorkQueue, ATaskThatReleasesItsAdmissionMakesRoomBeforeItReturns) {
  WorkQueue queue(1, 1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<absl::Status> inside;
  ASSERT_THAT(queue.Submit([&, gate](WorkQueue::Admission& admission) {
    EXPECT_THAT(queue.Submit([] {}), StatusIs(absl::StatusCode::kResourceExhausted));
    admission.Release();
    admission.Release();  // idempotent: frees one slot only
    inside.set_value(queue.Submit([] {}));
    gate.wait();
  }),
              IsOk());
  EXPECT_THAT(inside.get_future().get(), IsOk());
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

TEST(WorkQueue, WorkersAreNamedForProfilers) {
  WorkQueue queue(1, 1);
  std::promise<std::string> name;
  ASSERT_THAT(queue.Submit([&] {
    char buffer[16] = {};
    pthread_getname_np(pthread_self(), buffer, sizeof(buffer));
    name.set_value(buffer);
  }),
              IsOk());
  EXPECT_EQ(name.get_future().get(), "cuimg-worker");
}

}  // namespace
}  // namespace cuimg
