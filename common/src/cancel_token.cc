#include "cuimg/common/cancel_token.h"

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
    return absl::UnavailableError("the server is shutting down");
  }
  const int reason = reason_.load(std::memory_order_relaxed);
  if (reason == kDeadline || (deadline_ != Clock::time_point::max() && Clock::now() >= deadline_)) {
    return absl::DeadlineExceededError("the request's deadline passed");
  }
  if (reason == kCancelled) return absl::CancelledError("the client cancelled the request");
  return absl::OkStatus();
}

const CancelToken& NeverCancelled() {
  static const CancelToken* const token = new CancelToken();
  return *token;
}

}  // namespace cuimg
