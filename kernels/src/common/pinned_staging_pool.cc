#include "cuimg/common/pinned_staging_pool.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"

namespace cuimg {

HostMemorySource PinnedHostMemory() {
  return HostMemorySource{
      [](std::size_t bytes) -> absl::StatusOr<void*> {
        void* data = nullptr;
        const cudaError_t error = cudaHostAlloc(&data, bytes, cudaHostAllocPortable);
        if (error != cudaSuccess) {
          // Not sticky: clear it, or the next launch check on this thread would report it.
          (void)cudaGetLastError();
          return CudaStatus(error, absl::StrCat("cudaHostAlloc(", bytes, " bytes)").c_str(),
                            __FILE__, __LINE__);
        }
        return data;
      },
      // Nothing to act on if freeing fails (e.g. after a sticky error).
      [](void* data) { (void)cudaFreeHost(data); }};
}

PinnedStagingPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

PinnedStagingPool::Lease& PinnedStagingPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr && data_ != nullptr) pool_->Return(data_);
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

PinnedStagingPool::Lease::~Lease() {
  if (pool_ != nullptr && data_ != nullptr) pool_->Return(data_);
}

PinnedStagingPool::PinnedStagingPool(std::size_t budget_bytes, std::size_t chunk_bytes,
                                     HostMemorySource memory)
    : budget_bytes_(budget_bytes), chunk_bytes_(chunk_bytes), memory_(std::move(memory)) {}

PinnedStagingPool::~PinnedStagingPool() {
  for (void* data : idle_) memory_.release(data);
}

absl::StatusOr<PinnedStagingPool::Lease> PinnedStagingPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* data = idle_.back();
      idle_.pop_back();
      ++stats_.hits;
      stats_.idle_bytes -= chunk_bytes_;
      stats_.in_use_bytes += chunk_bytes_;
      return Lease(this, data, chunk_bytes_);
    }
    if (stats_.in_use_bytes + chunk_bytes_ > budget_bytes_) {
      ++stats_.refusals;
      return absl::ResourceExhaustedError(absl::StrCat("pinned staging: ", stats_.in_use_bytes,
                                                       " bytes leased, the budget is ",
                                                       budget_bytes_, " (pinned_staging_bytes)"));
    }
    ++stats_.misses;
    // Counted as leased from here, so that concurrent misses respect the budget.
    stats_.in_use_bytes += chunk_bytes_;
  }
  absl::StatusOr<void*> data = memory_.allocate(chunk_bytes_);
  if (!data.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_use_bytes -= chunk_bytes_;
    return data.status();
  }
  return Lease(this, *data, chunk_bytes_);
}

void PinnedStagingPool::Return(void* data) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use_bytes -= chunk_bytes_;
  stats_.idle_bytes += chunk_bytes_;
  idle_.push_back(data);
}

PinnedStagingPool::Stats PinnedStagingPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace cuimg
