// WorkQueue: a fixed pool of worker threads with bounded admission, so overload is answered with
// RESOURCE_EXHAUSTED instead of an unbounded queue.
#ifndef CUIMG_SERVER_WORK_QUEUE_H_
#define CUIMG_SERVER_WORK_QUEUE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "server/scheduling/cpu_warmer.h"

namespace cuimg {

class WorkQueue {
 public:
  // `threads` workers; at most `max_admitted` tasks queued or running at once. A worker that
  // has just finished a task polls for work for `spin` before it sleeps (one at a time, so at
  // most one core spins): a sleeping worker takes tens of microseconds to wake, the largest part
  // of a small request's server time. A poll that starts with no request in flight also keeps
  // `warm_cpus` CPUs (cpu_warmer.h; negative: all the process may use, 0: none) from idling
  // until it would end, so that gRPC's threads wake quickly too; a second request in flight
  // cools them at once, and none warms for kWarmHoldOff after it, since under load their polling
  // cost throughput (BENCHMARKS.md, "Halted vCPUs").
  WorkQueue(int threads, int max_admitted,
            std::chrono::microseconds spin = std::chrono::microseconds(0), int warm_cpus = 0);
  // Finishes every admitted task, then joins the workers.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // A running task's admission slot. Release() frees it before the task returns: a unary RPC
  // releases before it sends its response, so a client that calls again as soon as it has the
  // answer is admitted. Otherwise freed when the task returns. Idempotent; worker thread only.
  class Admission {
   public:
    void Release();

   private:
    friend class WorkQueue;
    explicit Admission(WorkQueue* queue) : queue_(queue) {}
    WorkQueue* queue_;
  };

  // Admits `task` to run on a worker. RESOURCE_EXHAUSTED (OVERLOADED; task not run, not kept)
  // when `max_admitted` tasks are already admitted; UNAVAILABLE (SHUTTING_DOWN) after Shutdown().
  absl::Status Submit(std::function<void(Admission&)> task);
  absl::Status Submit(std::function<void()> task);
  // What Submit would answer now for want of room: RESOURCE_EXHAUSTED when full, UNAVAILABLE
  // after Shutdown(), else OK. A hint only (a slot may free or fill right after); lets a caller
  // refuse before it spends work on a request that cannot be admitted.
  absl::Status CheckRoom() const;
  // Stops admitting, runs what was admitted, joins the workers. Idempotent.
  void Shutdown();
  int admitted() const;
  // CPUs kept from idling while a worker polls (0 without them).
  int warm_cpus() const { return warmer_ == nullptr ? 0 : warmer_->threads(); }
  // Of those, the CPUs polling now.
  int warm_polling() const { return warmer_ == nullptr ? 0 : warmer_->polling(); }
  // Under load the server is alone only for moments; warming at each cost p99 (run 160: 5.5-5.8
  // against 4.8-5.2 ms at 64 in flight), so a concurrent request holds warming off this long.
  static constexpr std::chrono::milliseconds kWarmHoldOff{50};

 private:
  void WorkerLoop();
  absl::Status RoomLocked() const;  // mu_ held
  // Polls `queued_` for up to spin_ unless another worker already does; true if work arrived.
  // When `alone` (nothing admitted), warms the CPUs for spin_ either way.
  bool SpinForWork(bool alone);

  const int max_admitted_;
  const std::chrono::microseconds spin_;
  std::atomic<int> queued_{0};         // tasks_.size(), readable without the lock
  std::atomic<bool> spinning_{false};  // a worker is polling
  std::atomic<bool> stop_polling_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void(Admission&)>> tasks_;
  int admitted_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::unique_ptr<CpuWarmer> warmer_;  // null without warm CPUs
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_WORK_QUEUE_H_
