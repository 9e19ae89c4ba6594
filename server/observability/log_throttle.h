// Rate limits for log lines that callers can cause at will (refused requests): a flood of them
// must not fill the disk, yet what was left out is still counted.
#ifndef CUIMG_SERVER_LOG_THROTTLE_H_
#define CUIMG_SERVER_LOG_THROTTLE_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cuimg {

// A token bucket per key: a key may write `burst` lines at once, then `lines_per_second` on
// average; the lines over that are counted instead. Keys must come from a small fixed set (e.g.
// RPC and status code), never from a request: each key keeps a bucket for the process's life.
// Thread-safe.
class LogThrottle {
 public:
  // lines_per_second > 0, burst >= 1.
  LogThrottle(double lines_per_second, double burst);

  // True when a line for `key` may be written at `now`; false counts it as suppressed. A `now`
  // earlier than the key's last one refills nothing (threads may pass their times out of order).
  bool Admit(absl::string_view key, absl::Time now);

  // The keys that had lines suppressed since the last call, with how many, in key order; their
  // counts start again from zero.
  std::vector<std::pair<std::string, std::int64_t>> TakeSuppressed();

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time refilled;
    std::int64_t suppressed = 0;
  };

  const double lines_per_second_;
  const double burst_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, Bucket> buckets_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_LOG_THROTTLE_H_
