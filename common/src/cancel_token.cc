#include "cuimg/common/cancel_token.h"

#include <algorithm>

#include "cuimg/common/error.h"

namespace cuimg {

CancelToken::Clock::time_point CancelToken::SteadyDeadline(
    std::chrono::system_clock::time_point deadline) {
  const auto now = std::chrono::system_clock::now();
  // Past one year the arithmetic below could overflow (gRPC's "none" is the clock's max).
  if (deadline - now > std::chrono::hours(24 * 365)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - now);
}

absl::Status CancelToken::Check() const {
  if (hard_stop_ != nullptr && hard_stop_->load(std::memory_order_relaxed)) {
    return MakeError(absl::StatusCode::kUnavailable, ErrorReason::kShuttingDown, "",
                     "the server is shutting down");
  }
  const int reason = reason_.load(std::memory_order_relaxed);
  if (reason == kDeadline || (deadline_ != Clock::time_point::max() && Clock::now() >= deadline_)) {
    return MakeError(absl::StatusCode::kDeadlineExceeded, ErrorReason::kDeadlineTooShort, "",
                     "the request's deadline passed");
  }
  if (reason == kCancelled) {
    return MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                     "the client cancelled the request");
  }
  return absl::OkStatus();
}

bool CancelToken::ClientDeadlineReached(std::chrono::system_clock::time_point started,
                                        std::chrono::system_clock::time_point deadline,
                                        std::chrono::system_clock::time_point now) {
  // gRPC's "no deadline" is the clock's max: no slack arithmetic near it.
  if (deadline - std::min(started, now) > std::chrono::hours(24 * 365)) return false;
  const auto budget = std::max(deadline - started, std::chrono::system_clock::duration::zero());
  const auto slack = std::chrono::milliseconds(100) + budget / 50;
  return now >= deadline - slack;
}

void CancelToken::MarkClientGone(std::chrono::system_clock::time_point started,
                                 std::chrono::system_clock::time_point deadline,
                                 std::chrono::system_clock::time_point now) {
  if (ClientDeadlineReached(started, deadline, now)) {
    MarkDeadlinePassed();
  } else {
    Cancel();
  }
}

const CancelToken& NeverCancelled() {
  static const CancelToken* const token = new CancelToken();
  return *token;
}

}  // namespace cuimg
