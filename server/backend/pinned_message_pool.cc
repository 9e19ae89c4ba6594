#include "server/backend/pinned_message_pool.h"

#include <utility>

#include "absl/status/statusor.h"

namespace cuimg {

class PinnedMessagePool::Buffer final : public HostBuffer {
 public:
  Buffer(std::shared_ptr<PinnedMessagePool> pool, std::size_t size_class, void* data,
         std::size_t bytes)
      : pool_(std::move(pool)), size_class_(size_class), data_(data), size_(bytes) {}
  ~Buffer() override { pool_->Return(size_class_, data_); }
  void* data() const override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  std::shared_ptr<PinnedMessagePool> pool_;
  std::size_t size_class_;
  void* data_;
  std::size_t size_;
};

std::shared_ptr<PinnedMessagePool> PinnedMessagePool::Create(std::size_t budget_bytes,
                                                             std::size_t min_bytes,
                                                             std::size_t max_bytes,
                                                             HostMemorySource memory) {
  return std::shared_ptr<PinnedMessagePool>(
      new PinnedMessagePool(budget_bytes, min_bytes, max_bytes, std::move(memory)));
}

PinnedMessagePool::PinnedMessagePool(std::size_t budget_bytes, std::size_t min_bytes,
                                     std::size_t max_bytes, HostMemorySource memory)
    : budget_bytes_(budget_bytes), min_bytes_(min_bytes), memory_(std::move(memory)) {
  std::size_t classes = 1;
  while ((min_bytes_ << (classes - 1)) < max_bytes) ++classes;
  idle_.resize(classes);
  stats_.pinned = true;
}

PinnedMessagePool::~PinnedMessagePool() {
  for (const std::vector<void*>& idle : idle_) {
    for (void* data : idle) memory_.release(data);
  }
}

std::vector<std::size_t> PinnedMessagePool::class_bytes() const {
  std::vector<std::size_t> sizes;
  for (std::size_t c = 0; c < idle_.size(); ++c) sizes.push_back(min_bytes_ << c);
  return sizes;
}

std::unique_ptr<HostBuffer> PinnedMessagePool::Allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  std::size_t size_class = 0;
  while (size_class < idle_.size() && (min_bytes_ << size_class) < bytes) ++size_class;
  if (size_class == idle_.size()) return nullptr;
  const std::size_t size = min_bytes_ << size_class;
  std::vector<void*> freed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<void*>& idle = idle_[size_class];
    if (!idle.empty()) {
      void* data = idle.back();
      idle.pop_back();
      ++stats_.hits;
      stats_.cached -= size;
      stats_.used += size;
      return std::make_unique<Buffer>(shared_from_this(), size_class, data, bytes);
    }
    if (stats_.used + size > budget_bytes_) {
      ++stats_.refusals;  // even freeing every idle buffer would not make room
      return nullptr;
    }
    // Room from other classes' idle buffers, largest first (fewest frees).
    for (std::size_t c = idle_.size(); c-- > 0;) {
      while (!idle_[c].empty() && stats_.used + stats_.cached + size > budget_bytes_) {
        freed.push_back(idle_[c].back());
        idle_[c].pop_back();
        stats_.cached -= min_bytes_ << c;
      }
    }
    ++stats_.misses;
    // Counted as leased from here, so that concurrent misses respect the budget.
    stats_.used += size;
  }
  for (void* data : freed) memory_.release(data);
  absl::StatusOr<void*> allocated = memory_.allocate(size);
  if (!allocated.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.used -= size;
    return nullptr;
  }
  return std::make_unique<Buffer>(shared_from_this(), size_class, *allocated, bytes);
}

void PinnedMessagePool::Return(std::size_t size_class, void* data) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t size = min_bytes_ << size_class;
  stats_.used -= size;
  stats_.cached += size;
  idle_[size_class].push_back(data);
}

HostBufferPoolStats PinnedMessagePool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace cuimg
