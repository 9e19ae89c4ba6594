// CancelToken: whether one request's work should stop. A backend call and the CPU references'
// loops check it between steps, iterations and bands of rows, so that work for a client that
// is gone, out of time, or for a server past its shutdown grace ends within milliseconds
// instead of running to completion.
#ifndef CUIMG_COMMON_CANCEL_TOKEN_H_
#define CUIMG_COMMON_CANCEL_TOKEN_H_

#include <atomic>
#include <chrono>

#include "absl/status/status.h"

namespace cuimg {

class CancelToken {
 public:
  using Clock = std::chrono::steady_clock;

  // A token that never stops: for tests and tools that run work to completion.
  CancelToken() = default;
  // Stops at `deadline` (Clock::time_point::max(): never), when Cancel() is called, or when
  // `*hard_stop` (may be null; must outlive the token) becomes true.
  CancelToken(Clock::time_point deadline, const std::atomic<bool>* hard_stop)
      : deadline_(deadline), hard_stop_(hard_stop) {}
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Converts a wall-clock deadline (gRPC's) to one on the monotonic clock; a deadline beyond a
  // year (gRPC's "infinite") becomes max().
  static Clock::time_point SteadyDeadline(std::chrono::system_clock::time_point deadline);

  // Marks the work abandoned by its client (CANCELLED), or out of time by the caller's own clock
  // (DEADLINE_EXCEEDED: gRPC cancels a call whose deadline passed, and its clock may be a little
  // ahead of the monotonic deadline here). Thread-safe; the first mark stays.
  void Cancel() { Mark(Reason::kCancelled); }
  void MarkDeadlinePassed() { Mark(Reason::kDeadline); }
  // For a call whose client went away (gRPC's OnCancel): MarkDeadlinePassed when the deadline has
  // passed by `now`, or nearly, else Cancel. A client cancels its call itself when its own deadline
  // passes, a moment before the server's copy does (that copy starts when the headers arrive, and
  // grpc-timeout is rounded up), so a cancellation within 100 ms + 2% of the call's budget
  // (`started` to `deadline`) before the deadline counts as the deadline; earlier ones are the
  // client's choice. System-clock times, as gRPC gives them; a deadline beyond a year is none.
  void MarkClientGone(std::chrono::system_clock::time_point started,
                      std::chrono::system_clock::time_point deadline,
                      std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
  // The rule above: true when a client leaving at `now` is taken for its deadline.
  static bool ClientDeadlineReached(std::chrono::system_clock::time_point started,
                                    std::chrono::system_clock::time_point deadline,
                                    std::chrono::system_clock::time_point now);

  // OK while the work should go on; else why not (with its reason, cuimg/common/error.h):
  // UNAVAILABLE (SHUTTING_DOWN), then DEADLINE_EXCEEDED (DEADLINE_TOO_SHORT) or CANCELLED
  // (CANCELLED). Once not OK, never OK again. Thread-safe; costs an
  // atomic load or two and a clock read (tens of nanoseconds), so call it per band of work, not
  // per pixel.
  absl::Status Check() const;
  // Check().ok(), for loops that only need to know whether to stop.
  bool Stopped() const { return !Check().ok(); }

 private:
  enum Reason : int { kRunning = 0, kCancelled = 1, kDeadline = 2 };
  void Mark(Reason reason) {
    int expected = kRunning;
    reason_.compare_exchange_strong(expected, reason, std::memory_order_relaxed);
  }

  Clock::time_point deadline_ = Clock::time_point::max();
  const std::atomic<bool>* hard_stop_ = nullptr;
  std::atomic<int> reason_{kRunning};
};

// A token that never stops, for callers that pass none.
const CancelToken& NeverCancelled();

}  // namespace cuimg

#endif  // CUIMG_COMMON_CANCEL_TOKEN_H_
