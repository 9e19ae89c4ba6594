#include "cuimg/common/device_buffer_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

std::size_t SizeClass(std::size_t bytes) {
  std::size_t c = std::size_t{1} << 16;  // 64 KiB minimum
  while (c < bytes) c <<= 1;
  return c;
}

}  // namespace

DeviceBufferCache::Lease::Lease(Lease&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)), buffer_(std::move(other.buffer_)) {}

DeviceBufferCache::Lease& DeviceBufferCache::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (cache_ != nullptr && buffer_.data() != nullptr) cache_->Return(std::move(buffer_));
    cache_ = std::exchange(other.cache_, nullptr);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

DeviceBufferCache::Lease::~Lease() {
  if (cache_ != nullptr && buffer_.data() != nullptr) cache_->Return(std::move(buffer_));
}

DeviceBufferCache::DeviceBufferCache(int device, std::size_t budget_bytes, std::size_t limit_bytes)
    : device_(device), budget_bytes_(budget_bytes), limit_bytes_(limit_bytes) {}

DeviceBufferCache::~DeviceBufferCache() { Trim(); }

absl::StatusOr<DeviceBufferCache::Lease> DeviceBufferCache::Acquire(std::size_t bytes) {
  if (bytes == 0) return Lease();
  const std::size_t size = SizeClass(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (limit_bytes_ != 0 && stats_.in_use_bytes + size > limit_bytes_) {
      // Alone over the limit, waiting cannot help; else other requests' leases will end.
      return MakeError(absl::StatusCode::kResourceExhausted,
                       size > limit_bytes_ ? ErrorReason::kLimitExceeded : ErrorReason::kOverloaded,
                       "",
                       absl::StrCat("device ", device_, " memory: ", stats_.in_use_bytes,
                                    " bytes leased + ", size, " requested exceeds the limit of ",
                                    limit_bytes_, " (device_memory_limit_bytes)"));
    }
    auto it = std::find_if(idle_.begin(), idle_.end(),
                           [size](const DeviceBuffer& b) { return b.size() == size; });
    if (it != idle_.end()) {
      DeviceBuffer buffer = std::move(*it);
      idle_.erase(it);
      ++stats_.hits;
      stats_.idle_bytes -= size;
      stats_.in_use_bytes += size;
      return Lease(this, std::move(buffer));
    }
    ++stats_.misses;
    EvictLocked(size);
    // Counted as leased from here, so that concurrent acquires respect the limit.
    stats_.in_use_bytes += size;
  }
  absl::StatusOr<DeviceBuffer> fresh = DeviceBuffer::Allocate(size);
  if (!fresh.ok() && fresh.status().code() == absl::StatusCode::kResourceExhausted) {
    Trim();  // the device is full: give back every idle buffer and try once more
    fresh = DeviceBuffer::Allocate(size);
  }
  if (!fresh.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_use_bytes -= size;
    return fresh.status();
  }
  return Lease(this, *std::move(fresh));
}

void DeviceBufferCache::Return(DeviceBuffer buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t size = buffer.size();
  stats_.in_use_bytes -= size;
  if (budget_bytes_ == 0) return;  // no caching: the buffer frees itself
  EvictLocked(size);
  if (stats_.idle_bytes + stats_.in_use_bytes + size > budget_bytes_) return;
  stats_.idle_bytes += size;
  idle_.push_front(std::move(buffer));
}

void DeviceBufferCache::EvictLocked(std::size_t bytes) {
  while (!idle_.empty() && stats_.idle_bytes + stats_.in_use_bytes + bytes > budget_bytes_) {
    stats_.idle_bytes -= idle_.back().size();
    idle_.pop_back();
    ++stats_.evictions;
  }
}

void DeviceBufferCache::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.evictions += idle_.size();
  idle_.clear();
  stats_.idle_bytes = 0;
}

DeviceBufferCache::Stats DeviceBufferCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace cuimg
