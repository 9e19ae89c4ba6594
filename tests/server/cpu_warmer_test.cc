#include "server/scheduling/cpu_warmer.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "server/scheduling/work_queue.h"

namespace cuimg {
namespace {

using namespace std::chrono_literals;

int AllowedCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// Polls `done` for up to 20 s (SCHED_IDLE threads run late on a busy machine).
template <typename F>
bool Eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + 20s;
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

  // Windows of seconds: the pollers are SCHED_IDLE, so on a loaded machine (a sanitizer build
  // beside the test) they may not run at all within a 300 ms window.
  warmer.WarmUntil(std::chrono::steady_clock::now() + 3s);
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == n; }));
  // A shorter window does not cut the current one short.
  warmer.WarmUntil(std::chrono::steady_clock::now());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(warmer.polling(), n);
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == 0; })) << "window never ended";

  // A window after the threads went to sleep wakes them again.
  warmer.WarmUntil(std::chrono::steady_clock::now() + 3s);
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == n; }));
}

TEST(CpuWarmer, EachThreadRunsAtTheLowestPriorityOnItsOwnCpu) {
  CpuWarmer warmer(-1);
  const std::vector<pid_t> ids = warmer.thread_ids();
  ASSERT_EQ(static_cast<int>(ids.size()), warmer.threads());
  std::set<int> cpus;
  for (pid_t id : ids) {
    // SCHED_IDLE: any other runnable thread takes the CPU from it at once.
    EXPECT_EQ(sched_getscheduler(id), SCHED_IDLE);
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(id, sizeof(set), &set), 0);
    ASSERT_EQ(CPU_COUNT(&set), 1);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.insert(cpu);
    }
  }
  EXPECT_EQ(cpus.size(), ids.size()) << "two threads on one CPU";
}

TEST(CpuWarmer, CoolEndsTheWindowAtOnce) {
  CpuWarmer warmer(1);
  ASSERT_EQ(warmer.threads(), 1);
  warmer.WarmUntil(std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(Eventually([&] { return warmer.polling() == 1; }));
  warmer.Cool();
  EXPECT_TRUE(Eventually([&] { return warmer.polling() == 0; }));
}

TEST(CpuWarmer, ACoolsHoldOffIgnoresWindowsUntilItEnds) {
  CpuWarmer warmer(1);
  ASSERT_EQ(warmer.threads(), 1);
  warmer.Cool(1h);
  warmer.WarmUntil(std::chrono::steady_clock::now() + 10s);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(warmer.polling(), 0);
  // A plain Cool sets no hold-off: a window after it polls.
  CpuWarmer fresh(1);
  fresh.Cool();
  fresh.WarmUntil(std::chrono::steady_clock::now() + 10s);
  EXPECT_TRUE(Eventually([&] { return fresh.polling() == 1; }));
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
  // Alone again, but within the hold-off after a concurrent request: no warming.
  const auto concurrent_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(queue.Submit([open] { open.wait(); }).ok());
  gate.set_value();
  EXPECT_TRUE(Eventually([&] { return queue.admitted() == 0; }));
  std::this_thread::sleep_for(5ms);
  if (std::chrono::steady_clock::now() - concurrent_at < WorkQueue::kWarmHoldOff) {
    EXPECT_EQ(queue.warm_polling(), 0);
  }  // else this machine stalled past the hold-off: nothing to conclude
  // After the hold-off, a request alone warms again.
  std::this_thread::sleep_for(WorkQueue::kWarmHoldOff);
  ASSERT_TRUE(queue.Submit([&] { ran.fetch_add(1); }).ok());
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
