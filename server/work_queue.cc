#include "server/work_queue.h"

#include "absl/strings/str_cat.h"

namespace cuimg {

WorkQueue::WorkQueue(int threads, int max_admitted) : max_admitted_(max_admitted) {
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

WorkQueue::~WorkQueue() { Shutdown(); }

absl::Status WorkQueue::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (admitted_ >= max_admitted_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "server busy: ", admitted_, " requests in flight (max_inflight_requests); retry later"));
    }
    ++admitted_;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return absl::OkStatus();
}

void WorkQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
}

int WorkQueue::admitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admitted_;
}

void WorkQueue::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    std::lock_guard<std::mutex> lock(mu_);
    --admitted_;
  }
}

}  // namespace cuimg
