// Page-locked host memory for message pixels (the CUDA backend's AllocateHostBuffer): copies
// between it and a device are single DMAs, and a kernel can write a result into it directly.
// Buffers come in size classes (min_bytes doubled up to kQuarterStepsFrom, then in quarter
// octaves, up to the first class holding max_bytes) under one byte budget for all classes, and are
// kept once allocated, so a warm server calls cudaHostAlloc no more. When a class has no idle
// buffer and the budget is spent, idle buffers of other classes are freed to make room
// (cudaFreeHost may wait for the device: only a change of the workload's sizes does that); when
// that is not enough, the caller uses the heap.
#ifndef CUIMG_SERVER_PINNED_MESSAGE_POOL_H_
#define CUIMG_SERVER_PINNED_MESSAGE_POOL_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "cuimg/common/pinned_staging_pool.h"
#include "server/backend/host_buffer.h"

namespace cuimg {

class PinnedMessagePool : public std::enable_shared_from_this<PinnedMessagePool> {
 public:
  // Classes from this size on grow by a quarter of their octave (16, 20, 24, 28, 32, 40 MiB...).
  static constexpr std::size_t kQuarterStepsFrom = std::size_t{16} << 20;

  // Requires 0 < min_bytes <= max_bytes. budget_bytes 0: every Allocate gives nullptr.
  static std::shared_ptr<PinnedMessagePool> Create(std::size_t budget_bytes, std::size_t min_bytes,
                                                   std::size_t max_bytes,
                                                   HostMemorySource memory = PinnedHostMemory());
  ~PinnedMessagePool();
  PinnedMessagePool(const PinnedMessagePool&) = delete;
  PinnedMessagePool& operator=(const PinnedMessagePool&) = delete;

  // A buffer whose size() is `bytes`, from the smallest class that holds them. nullptr when
  // `bytes` is 0 or over max_bytes, when the budget is spent (a refusal), or when the allocation
  // fails. The buffer keeps the pool alive. Thread-safe.
  std::unique_ptr<HostBuffer> Allocate(std::size_t bytes);
  HostBufferPoolStats stats() const;
  // The classes' buffer sizes, smallest first.
  std::vector<std::size_t> class_bytes() const;

 private:
  class Buffer;
  PinnedMessagePool(std::size_t budget_bytes, std::size_t min_bytes, std::size_t max_bytes,
                    HostMemorySource memory);
  void Return(std::size_t size_class, void* data);

  const std::size_t budget_bytes_;
  std::vector<std::size_t> class_bytes_;  // ascending
  const HostMemorySource memory_;
  mutable std::mutex mu_;
  std::vector<std::vector<void*>> idle_;  // per class, most recently returned at the back
  HostBufferPoolStats stats_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_PINNED_MESSAGE_POOL_H_
