#include "cuimg/codec/decode_threads.h"

#include <algorithm>

#include "absl/synchronization/blocking_counter.h"

namespace cuimg {

DecodeThreads::DecodeThreads(int threads) {
  idle_ = std::max(threads, 0);
  workers_.reserve(static_cast<std::size_t>(idle_));
  for (int i = 0; i < idle_; ++i) workers_.emplace_back([this] { Work(); });
}

DecodeThreads::~DecodeThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void DecodeThreads::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

int DecodeThreads::Run(int wanted, const std::function<void(int index, int n)>& task) {
  int helpers = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    helpers = std::clamp(wanted - 1, 0, idle_);
    idle_ -= helpers;
  }
  const int n = 1 + helpers;
  if (helpers == 0) {
    task(0, 1);
    return 1;
  }
  absl::BlockingCounter done(helpers);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 1; i < n; ++i) {
      queue_.emplace_back([this, &task, &done, i, n] {
        task(i, n);
        {
          // The reservation ends before the caller is released: its next Run sees the worker.
          std::lock_guard<std::mutex> lock(mutex_);
          ++idle_;
        }
        done.DecrementCount();
      });
    }
  }
  ready_.notify_all();
  task(0, n);
  done.Wait();
  return n;
}

}  // namespace cuimg
