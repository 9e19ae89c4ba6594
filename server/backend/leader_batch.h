// Batches the calls that arrive while a shared engine is busy: the first caller to find the
// engine idle becomes the leader and runs the waiting items (its own among them, oldest first,
// up to a maximum) as one batch; callers arriving meanwhile wait and are taken by the next batch.
// An idle engine runs a lone call at once, so batching costs latency only under load. (nvJPEG's
// hardware engines decode one call at a time per process, and a batch of 4 frames takes about as
// long as one: BENCHMARKS.md, run 190.)
#ifndef CUIMG_SERVER_BACKEND_LEADER_BATCH_H_
#define CUIMG_SERVER_BACKEND_LEADER_BATCH_H_

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace cuimg {

template <typename Item>
class LeaderBatch {
 public:
  // `run` processes one batch (1..max_batch items, in arrival order) and records each item's
  // outcome in the item itself; it runs on a caller's thread, one batch at a time, without the
  // lock held. max_batch >= 1.
  LeaderBatch(int max_batch, std::function<void(absl::Span<Item* const>)> run)
      : max_batch_(std::max(1, max_batch)), run_(std::move(run)) {}
  LeaderBatch(const LeaderBatch&) = delete;
  LeaderBatch& operator=(const LeaderBatch&) = delete;

  // Returns once a batch holding `item` has run. Thread-safe; `item` must live until then.
  void Submit(Item* item) {
    Waiter self{item, false};
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&self);
    while (!self.done) {
      if (busy_) {
        idle_.wait(lock);
        continue;
      }
      busy_ = true;
      const std::size_t n = std::min(queue_.size(), static_cast<std::size_t>(max_batch_));
      std::vector<Waiter*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<Item*> items;
      items.reserve(n);
      for (Waiter* w : batch) items.push_back(w->item);
      lock.unlock();
      run_(absl::MakeConstSpan(items));
      lock.lock();
      for (Waiter* w : batch) w->done = true;
      ++batches_;
      busy_ = false;
      idle_.notify_all();
    }
  }

  // Calls queued and not yet taken by a batch (tests).
  std::size_t waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

  // Batches run so far (tests).
  long long batches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }

 private:
  struct Waiter {
    Item* item;
    bool done;
  };
  const int max_batch_;
  const std::function<void(absl::Span<Item* const>)> run_;
  // std::mutex, not absl::Mutex: TSan sees the standard library's locks (Debian's Abseil is not
  // built for it).
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::deque<Waiter*> queue_;  // guarded by mu_, as are busy_ and batches_
  bool busy_ = false;
  long long batches_ = 0;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_BACKEND_LEADER_BATCH_H_
