// PinnedStagingPool: one device's page-locked host chunks, through which copies between pageable
// host memory (request bytes) and the device are staged (staged_copy.h). Chunks have one size and
// are kept once allocated, so a warm server calls cudaHostAlloc no more; the pool never holds more
// than its byte budget, and a copy that finds it spent copies from pageable memory instead of
// waiting.
#ifndef CUIMG_COMMON_PINNED_STAGING_POOL_H_
#define CUIMG_COMMON_PINNED_STAGING_POOL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"

namespace cuimg {

// Where a pool's chunks come from. PinnedHostMemory() is the real one; tests may pass heap memory
// to check the accounting without a GPU.
struct HostMemorySource {
  std::function<absl::StatusOr<void*>(std::size_t bytes)> allocate;
  std::function<void(void* data)> release;
};

// cudaHostAlloc (portable: usable by every device) / cudaFreeHost.
HostMemorySource PinnedHostMemory();

class PinnedStagingPool {
 public:
  struct Stats {
    std::uint64_t hits = 0;        // leases served by an idle chunk
    std::uint64_t misses = 0;      // leases that allocated a chunk
    std::uint64_t refusals = 0;    // leases refused because the budget was spent
    std::size_t idle_bytes = 0;    // allocated chunks free for reuse
    std::size_t in_use_bytes = 0;  // chunks leased out
  };

  // One leased chunk; goes back to the pool when destroyed. Move-only. The holder must only drop
  // it once no copy uses the memory any more (after synchronizing the stream that used it).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    void* data() const { return data_; }
    std::size_t size() const { return size_; }

   private:
    friend class PinnedStagingPool;
    Lease(PinnedStagingPool* pool, void* data, std::size_t size)
        : pool_(pool), data_(data), size_(size) {}
    PinnedStagingPool* pool_ = nullptr;
    void* data_ = nullptr;
    std::size_t size_ = 0;
  };

  // Chunks of chunk_bytes (> 0); at most budget_bytes / chunk_bytes of them exist at once (0: the
  // pool is disabled and every Acquire is refused). The pool must outlive its leases.
  PinnedStagingPool(std::size_t budget_bytes, std::size_t chunk_bytes,
                    HostMemorySource memory = PinnedHostMemory());
  ~PinnedStagingPool();
  PinnedStagingPool(const PinnedStagingPool&) = delete;
  PinnedStagingPool& operator=(const PinnedStagingPool&) = delete;

  // A chunk of chunk_bytes(): an idle one, else a new allocation while the budget allows.
  // RESOURCE_EXHAUSTED when the budget is spent (checked before allocating; the caller copies
  // without staging); the allocation's own error when it fails. Thread-safe.
  absl::StatusOr<Lease> Acquire();
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  std::size_t budget_bytes() const { return budget_bytes_; }
  Stats stats() const;

 private:
  void Return(void* data);

  const std::size_t budget_bytes_;
  const std::size_t chunk_bytes_;
  const HostMemorySource memory_;
  mutable std::mutex mu_;
  std::vector<void*> idle_;  // most recently returned at the back
  Stats stats_;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_PINNED_STAGING_POOL_H_
