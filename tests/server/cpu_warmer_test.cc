#include "server/cpu_warmer.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "server/work_queue.h"

namespace cuimg {
namespace {

using namespace std::chrono_literals;

int AllowedCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// Polls `done` for up to 5 s.
template <typename F>
bool Eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

TEST(CpuWarmer, OneLowPriorityThreadPerCpuAskedForAtMostAllAllowed) {
  const int allowed = AllowedCpuCount();
  ASSERT_GE(allowed, 1);
  EXPECT_EQ(CpuWarmer(1).threads(), 1);
  EXPECT_EQ(CpuWarmer(-1).threads(), allowed);
  EXPECT_EQ(CpuWarmer(allowed + 5).threads(), allowed);
  EXPECT_EQ(CpuWarmer(0).threads(), 0);
}

TEST(CpuWarmer, PollsOnlyWithinTheWindowAndItsExtensions) {
  CpuWarmer warmer(2);
  const int n = warmer.threads();
  ASSERT_GE(n, 1);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(warmer.polling(), 0) << "polling before any window";

  warmer.WarmUntil(std::chrono::steady_clock::now() + 300ms);
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == n; }));
  // A shorter window does not cut the current one short.
  warmer.WarmUntil(std::chrono::steady_clock::now());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(warmer.polling(), n);
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == 0; })) << "window never ended";

  // A window after the threads went to sleep wakes them again.
  warmer.WarmUntil(std::chrono::steady_clock::now() + 300ms);
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == n; }));
}

TEST(CpuWarmer, PollingThreadsRunAtTheLowestPriority) {
  CpuWarmer warmer(1);
  ASSERT_EQ(warmer.threads(), 1);
  warmer.WarmUntil(std::chrono::steady_clock::now() + 2s);
  ASSERT_TRUE(Eventually([&] { return warmer.polling() == 1; }));
  // A normal thread on the warm CPU gets it: 100 ms of work takes about 100 ms of wall time
  // (at equal priority, sharing with the poller, it would take about 200 ms).
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int first = 0;
  while (!CPU_ISSET(first, &set)) ++first;
  std::chrono::steady_clock::duration wall{};
  std::thread worker([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
    const auto start = std::chrono::steady_clock::now();
    timespec cpu0{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    for (;;) {
      timespec now{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
      if ((now.tv_sec - cpu0.tv_sec) * 1000000000LL + (now.tv_nsec - cpu0.tv_nsec) >= 100000000LL) {
        break;
      }
    }
    wall = std::chrono::steady_clock::now() - start;
  });
  worker.join();
  // Generous for a loaded machine: far below the ~200 ms that sharing would take.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(wall).count(), 160);
}

TEST(CpuWarmer, CoolEndsTheWindowAtOnce) {
  CpuWarmer warmer(1);
  ASSERT_EQ(warmer.threads(), 1);
  warmer.WarmUntil(std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(Eventually([&] { return warmer.polling() == 1; }));
  warmer.Cool();
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == 0; }));
}

TEST(WorkQueue, RequestsOneAtATimeWarmTheCpusAndASecondInFlightCoolsThem) {
  WorkQueue queue(2, 10, 10s, 1);
  ASSERT_EQ(queue.warm_cpus(), 1);
  EXPECT_EQ(queue.warm_polling(), 0);
  // A request alone: once it is done, a worker polls with nothing admitted and warms the CPU.
  std::atomic<int> ran{0};
  ASSERT_TRUE(queue.Submit([&] { ran.fetch_add(1); }).ok());
  EXPECT_TRUE(Eventually([&] { return queue.warm_polling() == 1; }));
  // A second request in flight cools it at once, well before the 10 s poll ends.
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  ASSERT_TRUE(queue.Submit([open] { open.wait(); }).ok());
  ASSERT_TRUE(queue.Submit([&] { ran.fetch_add(1); }).ok());
  EXPECT_TRUE(Eventually([&] { return queue.warm_polling() == 0; }));
  // With one still running, a worker that polls does not warm.
  EXPECT_TRUE(Eventually([&] { return ran.load() == 2; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(queue.warm_polling(), 0);
  // Alone again: warm again.
  gate.set_value();
  EXPECT_TRUE(Eventually([&] { return queue.warm_polling() == 1; }));
}

TEST(WorkQueue, WarmCpusNeedPollingWorkersAndDoNotDelayShutdown) {
  EXPECT_EQ(WorkQueue(1, 10, 0us, -1).warm_cpus(), 0) << "no polling, no warm CPUs";
  WorkQueue queue(2, 100, 10s, 1);
  ASSERT_EQ(queue.warm_cpus(), 1);
  ASSERT_TRUE(queue.Submit([] {}).ok());
  ASSERT_TRUE(Eventually([&] { return queue.warm_polling() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  queue.Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

}  // namespace
}  // namespace cuimg
