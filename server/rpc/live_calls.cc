#include "server/rpc/live_calls.h"

#include "cuimg/common/error.h"

namespace cuimg {

LiveCalls::Hold& LiveCalls::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    calls_ = other.calls_;
    other.calls_ = nullptr;
  }
  return *this;
}

void LiveCalls::Hold::Release() {
  if (calls_ == nullptr) return;
  calls_->Leave();
  calls_ = nullptr;
}

absl::StatusOr<LiveCalls::Hold> LiveCalls::Enter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) {
    return MakeError(absl::StatusCode::kUnavailable, ErrorReason::kShuttingDown, "",
                     "the server is shutting down");
  }
  ++live_;
  return Hold(this);
}

void LiveCalls::Leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--live_ > 0) return;
  }
  cv_.notify_all();
}

bool LiveCalls::Drain(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  draining_ = true;
  return cv_.wait_until(lock, absl::ToChronoTime(deadline), [this] { return live_ == 0; });
}

int LiveCalls::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

}  // namespace cuimg
