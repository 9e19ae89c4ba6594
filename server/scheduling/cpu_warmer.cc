#include "server/scheduling/cpu_warmer.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cuimg {
namespace {

// The CPUs this process may run on, in order.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

bool CpuWarmer::Prepare(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) return false;
  // Lowering a thread's own policy needs no privilege; with pid 0 it applies to this thread.
  sched_param param{};
  return sched_setscheduler(0, SCHED_IDLE, &param) == 0;
}

CpuWarmer::CpuWarmer(int cpus) {
  std::vector<int> allowed = AllowedCpus();
  if (cpus >= 0 && static_cast<std::size_t>(cpus) < allowed.size()) allowed.resize(cpus);
  // Each thread reports whether it could prepare itself before the constructor returns, so that
  // threads() is exact.
  int reported = 0;
  for (int cpu : allowed) {
    threads_.emplace_back([this, cpu, &reported] {
      pthread_setname_np(pthread_self(), "cuimg-warm");
      const bool ok = Prepare(cpu);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++reported;
        if (ok) ids_.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
      }
      cv_.notify_all();
      if (ok) Run();
    });
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return reported == static_cast<int>(threads_.size()); });
}

CpuWarmer::~CpuWarmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_relaxed);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CpuWarmer::Cool(Clock::duration hold_off) {
  if (hold_off > Clock::duration::zero()) {
    quiet_until_.store(Ticks(Clock::now() + hold_off), std::memory_order_relaxed);
  }
  until_.store(0, std::memory_order_relaxed);
}

void CpuWarmer::WarmUntil(Clock::time_point until) {
  const std::int64_t now = Ticks(Clock::now());
  if (now < quiet_until_.load(std::memory_order_relaxed)) return;
  const std::int64_t want = Ticks(until);
  std::int64_t was = until_.load(std::memory_order_relaxed);
  while (was < want && !until_.compare_exchange_weak(was, want, std::memory_order_relaxed)) {
  }
  // Threads may be asleep only once the previous window has passed: wake them then (the lock
  // orders this after a sleeper's check of the window, so no wake-up is lost).
  if (was <= now) {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }
}

void CpuWarmer::Run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_.load(std::memory_order_relaxed) || Warm(); });
      if (stop_.load(std::memory_order_relaxed)) return;
    }
    polling_.fetch_add(1, std::memory_order_relaxed);
    while (!stop_.load(std::memory_order_relaxed) && Warm()) CpuRelax();
    polling_.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace cuimg
