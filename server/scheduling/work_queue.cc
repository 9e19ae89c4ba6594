#include "server/scheduling/work_queue.h"

#include <pthread.h>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

WorkQueue::WorkQueue(int threads, int max_admitted, std::chrono::microseconds spin, int warm_cpus)
    : max_admitted_(max_admitted), spin_(spin) {
  if (warm_cpus != 0 && spin.count() > 0) warmer_ = std::make_unique<CpuWarmer>(warm_cpus);
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    workers_.emplace_back([this] {
      // Named so that top, perf and /proc tell the workers from gRPC's and CUDA's threads.
      pthread_setname_np(pthread_self(), "cuimg-worker");
      WorkerLoop();
    });
  }
}

WorkQueue::~WorkQueue() { Shutdown(); }

void WorkQueue::Admission::Release() {
  if (queue_ == nullptr) return;
  std::lock_guard<std::mutex> lock(queue_->mu_);
  --queue_->admitted_;
  queue_ = nullptr;
}

absl::Status WorkQueue::Submit(std::function<void()> task) {
  return Submit([task = std::move(task)](Admission&) { task(); });
}

absl::Status WorkQueue::RoomLocked() const {
  if (stopping_) {
    return MakeError(absl::StatusCode::kUnavailable, ErrorReason::kShuttingDown, "",
                     "server is shutting down");
  }
  if (admitted_ >= max_admitted_) {
    return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "",
                     absl::StrCat("server busy: ", admitted_,
                                  " requests in flight (max_inflight_requests); retry later"));
  }
  return absl::OkStatus();
}

absl::Status WorkQueue::CheckRoom() const {
  std::lock_guard<std::mutex> lock(mu_);
  return RoomLocked();
}

absl::Status WorkQueue::Submit(std::function<void(Admission&)> task) {
  bool concurrent = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status room = RoomLocked(); !room.ok()) return room;
    ++admitted_;
    concurrent = admitted_ > 1;
    tasks_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
  }
  if (concurrent && warmer_ != nullptr) warmer_->Cool(kWarmHoldOff);
  cv_.notify_one();
  return absl::OkStatus();
}

void WorkQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    stop_polling_.store(true, std::memory_order_relaxed);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  // Not reset: a Submit that raced with this may still Cool() it. It goes with the queue.
  if (warmer_ != nullptr) warmer_->Cool();
}

int WorkQueue::admitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admitted_;
}

bool WorkQueue::SpinForWork(bool alone) {
  if (spin_.count() <= 0) return false;
  const auto until = std::chrono::steady_clock::now() + spin_;
  // Warm even when another worker polls already: the server has just become idle.
  if (alone && warmer_ != nullptr) warmer_->WarmUntil(until);
  if (spinning_.exchange(true, std::memory_order_acquire)) return false;
  bool found = false;
  while (!stop_polling_.load(std::memory_order_relaxed)) {
    if (queued_.load(std::memory_order_acquire) > 0) {
      found = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= until) break;
    CpuRelax();
  }
  spinning_.store(false, std::memory_order_release);
  return found;
}

void WorkQueue::WorkerLoop() {
  // No poll before the first task: at start nothing has just gone idle, and warming the CPUs
  // then would only spend them.
  bool worked = false;
  for (;;) {
    std::function<void(Admission&)> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (worked && tasks_.empty() && !stopping_) {
        const bool alone = admitted_ == 0;
        lock.unlock();
        SpinForWork(alone);
        lock.lock();
      }
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    Admission admission(this);
    task(admission);
    task = nullptr;  // what it holds goes before its slot does
    admission.Release();
    worked = true;
  }
}

}  // namespace cuimg
