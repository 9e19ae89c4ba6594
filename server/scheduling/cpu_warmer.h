// CpuWarmer: keeps CPUs from idling while requests arrive one at a time. On a virtual machine an
// idle vCPU halts, and a thread woken on a CPU that has been idle past the host's halt-polling
// window (~200 us on the H200 host) starts 13-25 us later at p50 (p99 140-200 us) than on one
// idle for less (5 us). gRPC's threads sleep between calls, so a call whose round trip exceeds
// that window pays it on arrival (BENCHMARKS.md, "Halted vCPUs"). A warm CPU runs one polling
// thread at SCHED_IDLE: any other runnable thread takes the CPU from it at once, and the CPU
// never halts.
#ifndef CUIMG_SERVER_CPU_WARMER_H_
#define CUIMG_SERVER_CPU_WARMER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace cuimg {

// One step of a polling loop: tells the core this thread spins (x86 `pause`).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class CpuWarmer {
 public:
  using Clock = std::chrono::steady_clock;

  // One thread on each of the first `cpus` CPUs of the process's affinity mask (every one of
  // them when `cpus` is negative or exceeds it). Threads sleep until WarmUntil. A thread that
  // cannot lower itself to SCHED_IDLE (or pin itself) exits at once instead of polling at
  // normal priority; threads() counts only those that run.
  explicit CpuWarmer(int cpus);
  // Stops the polling and joins the threads.
  ~CpuWarmer();
  CpuWarmer(const CpuWarmer&) = delete;
  CpuWarmer& operator=(const CpuWarmer&) = delete;

  // Keeps the CPUs polling until `until`; extends the current window, never shortens it. Does
  // nothing while a Cool's hold-off lasts.
  void WarmUntil(Clock::time_point until);
  // Ends the current window now, and ignores WarmUntil for `hold_off`: under load the polling
  // costs throughput (BENCHMARKS.md).
  void Cool(Clock::duration hold_off = Clock::duration::zero());
  // Threads ready to poll (pinned, at SCHED_IDLE).
  int threads() const { return static_cast<int>(ids_.size()); }
  // Threads polling now.
  int polling() const { return polling_.load(std::memory_order_relaxed); }
  // The kernel's ids of the ready threads.
  const std::vector<pid_t>& thread_ids() const { return ids_; }

 private:
  static std::int64_t Ticks(Clock::time_point t) { return t.time_since_epoch().count(); }
  bool Warm() const { return Ticks(Clock::now()) < until_.load(std::memory_order_relaxed); }
  // Pins and lowers the calling thread; false if either fails.
  static bool Prepare(int cpu);
  void Run();

  std::atomic<std::int64_t> until_{0};        // Clock ticks: poll while now is before this
  std::atomic<std::int64_t> quiet_until_{0};  // Clock ticks: WarmUntil ignored before this
  std::atomic<int> polling_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pid_t> ids_;  // of the ready threads; complete before the constructor returns
  std::vector<std::thread> threads_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_CPU_WARMER_H_
