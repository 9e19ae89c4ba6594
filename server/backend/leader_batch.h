// Batches the calls that arrive while a shared engine is busy: the first caller to find a lane of
// the engine free becomes the leader and runs the waiting items (its own among them, oldest
// first, up to a maximum) as one batch in that lane; callers arriving while every lane is taken
// wait and are taken by the next batch. A free lane runs a lone call at once, so batching costs
// latency only under load. (nvJPEG's hardware engines decode a round of 7 1080p frames in about
// the time of one, and two calls at once overlap one's host work with the other's round:
// BENCHMARKS.md, "the JPEG engines' rounds".)
//
// A leader may also wait a little for items already on their way (Triton's
// max_queue_delay_microseconds, bounded the same way): callers announce themselves with a
// BatchArrivals ticket while they prepare their item (a JPEG's header walk), and a leader whose
// batch is not full waits, up to its options' max_delay, while any announced caller has not yet
// arrived. With nobody announced it never waits, so a lone call keeps its latency.
#ifndef CUIMG_SERVER_BACKEND_LEADER_BATCH_H_
#define CUIMG_SERVER_BACKEND_LEADER_BATCH_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace cuimg {

// Callers on their way to a batch: counted from Expect() until their ticket arrives (Submit) or
// is destroyed (the caller went elsewhere). Thread-safe; must outlive its tickets.
class BatchArrivals {
 public:
  class Ticket {
   public:
    Ticket() = default;  // counts nothing
    Ticket(Ticket&& other) noexcept : arrivals_(std::exchange(other.arrivals_, nullptr)) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        Arrive();
        arrivals_ = std::exchange(other.arrivals_, nullptr);
      }
      return *this;
    }
    ~Ticket() { Arrive(); }
    // The caller is no longer on its way (it has queued its item, or gone elsewhere).
    void Arrive() {
      if (arrivals_ != nullptr) std::exchange(arrivals_, nullptr)->coming_.fetch_sub(1);
    }

   private:
    friend class BatchArrivals;
    explicit Ticket(BatchArrivals* arrivals) : arrivals_(arrivals) {
      arrivals_->coming_.fetch_add(1);
    }
    BatchArrivals* arrivals_ = nullptr;
  };

  Ticket Expect() { return Ticket(this); }
  // Callers announced and not yet arrived.
  int coming() const { return coming_.load(); }

 private:
  std::atomic<int> coming_{0};
};

// How a submitted item was run: the size of its batch; exactly one item of each batch (its
// oldest) has `first`, so that batches are counted once, with how long that batch's leader waited
// for items before it ran (0 for the others).
struct BatchOutcome {
  int size = 0;
  bool first = false;
  double waited_us = 0;
};

template <typename Item>
class LeaderBatch {
 public:
  struct Options {
    int max_batch = 4;  // >= 1
    // Longest a leader waits for announced callers; 0: never.
    std::chrono::microseconds max_delay{0};
    // Where callers announce themselves (may be shared by several batchers); null: none.
    const BatchArrivals* arrivals = nullptr;
    // Batches that may run at once, each in its own lane in [0, lanes); >= 1.
    int lanes = 1;
  };

  // `run(lane, items)` processes one batch (1..max_batch items, in arrival order) and records each
  // item's outcome in the item itself; it runs on a caller's thread without the lock held, at most
  // one batch a lane at a time (so a lane's resources need no lock of their own).
  using Run = std::function<void(int lane, absl::Span<Item* const>)>;

  LeaderBatch(Options options, Run run) : options_(options), run_(std::move(run)) {
    options_.max_batch = std::max(1, options_.max_batch);
    options_.lanes = std::max(1, options_.lanes);
    for (int lane = options_.lanes - 1; lane >= 0; --lane) free_lanes_.push_back(lane);
  }
  LeaderBatch(int max_batch, Run run)
      : LeaderBatch(Options{max_batch, std::chrono::microseconds(0), nullptr}, std::move(run)) {}
  LeaderBatch(const LeaderBatch&) = delete;
  LeaderBatch& operator=(const LeaderBatch&) = delete;

  // Returns once a batch holding `item` has run. `ticket` (may be null): this caller's
  // announcement, which arrives as the item is queued. `stop` (may be empty): looked at every
  // kStopPoll while the item waits behind running batches; once it returns true before a batch
  // has taken the item, the item leaves the queue unrun and Submit returns an outcome of size 0
  // (a batch already holding it runs it whatever `stop` says). Thread-safe; `item` must live
  // until Submit returns.
  BatchOutcome Submit(Item* item, BatchArrivals::Ticket* ticket = nullptr,
                      const std::function<bool()>& stop = {}) {
    Waiter self{item, false, false, BatchOutcome{}};
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&self);
    if (ticket != nullptr) ticket->Arrive();
    arrived_.notify_all();  // leaders of several lanes may be waiting
    while (!self.done) {
      // Taken by a batch running in another lane: wait for it, whatever `stop` says.
      if (self.taken || free_lanes_.empty()) {
        if (!stop || self.taken) {
          idle_.wait(lock);
          continue;
        }
        idle_.wait_for(lock, kStopPoll);
        if (self.done || self.taken || !free_lanes_.empty()) continue;  // lead, or wait for it
        if (stop()) {
          const auto it = std::find(queue_.begin(), queue_.end(), &self);
          if (it != queue_.end()) {
            queue_.erase(it);
            return BatchOutcome{};
          }
        }
        continue;
      }
      const int lane = free_lanes_.back();
      free_lanes_.pop_back();
      const double waited_us = WaitForArrivals(lock);
      if (queue_.empty()) {  // a leader in another lane took every item, this one's among them
        free_lanes_.push_back(lane);
        idle_.notify_all();
        continue;
      }
      const std::size_t n = std::min(queue_.size(), static_cast<std::size_t>(options_.max_batch));
      std::vector<Waiter*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      std::vector<Item*> items;
      items.reserve(n);
      for (Waiter* w : batch) {
        w->taken = true;
        items.push_back(w->item);
      }
      lock.unlock();
      run_(lane, absl::MakeConstSpan(items));
      lock.lock();
      for (Waiter* w : batch) {
        w->done = true;
        w->outcome.size = static_cast<int>(n);
      }
      // The leader's own item may be in a later batch (the queue was longer than one).
      batch.front()->outcome.first = true;
      batch.front()->outcome.waited_us = waited_us;
      ++batches_;
      free_lanes_.push_back(lane);
      idle_.notify_all();
    }
    return self.outcome;
  }

  // How often a waiting caller looks at its `stop`: a cancellation has no signal to wait on
  // (CancelToken is polled), and 1 ms is small beside a deadline and costs a waiter nothing.
  static constexpr std::chrono::milliseconds kStopPoll{1};

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
    bool taken;            // a batch holds it
    bool done;             // that batch has run
    BatchOutcome outcome;  // set with done
  };

  // With a lane taken and the lock held: waits while the batch is not full, an announced caller
  // has not arrived, and max_delay has not passed. Returns the wait in µs.
  double WaitForArrivals(std::unique_lock<std::mutex>& lock) {
    auto worth_waiting = [&] {
      return options_.arrivals != nullptr && options_.max_delay.count() > 0 &&
             queue_.size() < static_cast<std::size_t>(options_.max_batch) &&
             options_.arrivals->coming() > 0;
    };
    if (!worth_waiting()) return 0;
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + options_.max_delay;
    while (worth_waiting() && std::chrono::steady_clock::now() < deadline) {
      arrived_.wait_until(lock, deadline);
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  }

  Options options_;
  const Run run_;
  // std::mutex, not absl::Mutex: TSan sees the standard library's locks (Debian's Abseil is not
  // built for it).
  mutable std::mutex mu_;
  std::condition_variable idle_;     // a lane is free again
  std::condition_variable arrived_;  // an item was queued (for a leader waiting for arrivals)
  std::deque<Waiter*> queue_;        // guarded by mu_, as are free_lanes_ and batches_
  std::vector<int> free_lanes_;      // the lanes no batch runs in
  long long batches_ = 0;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_BACKEND_LEADER_BATCH_H_
