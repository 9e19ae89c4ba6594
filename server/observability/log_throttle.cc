#include "server/observability/log_throttle.h"

#include <algorithm>

namespace cuimg {

LogThrottle::LogThrottle(double lines_per_second, double burst)
    : lines_per_second_(lines_per_second), burst_(burst) {}

bool LogThrottle::Admit(absl::string_view key, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = buckets_.try_emplace(key);
  Bucket& b = it->second;
  if (inserted) {
    b.tokens = burst_;
  } else if (now > b.refilled) {
    b.tokens =
        std::min(burst_, b.tokens + absl::ToDoubleSeconds(now - b.refilled) * lines_per_second_);
  }
  b.refilled = std::max(b.refilled, now);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  ++b.suppressed;
  return false;
}

std::vector<std::pair<std::string, std::int64_t>> LogThrottle::TakeSuppressed() {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, bucket] : buckets_) {
    if (bucket.suppressed == 0) continue;
    out.emplace_back(key, bucket.suppressed);
    bucket.suppressed = 0;
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cuimg
