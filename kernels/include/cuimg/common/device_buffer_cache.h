// DeviceBufferCache: a caching allocator for one device. Buffers are kept in power-of-two size
// classes and handed out again instead of calling cudaMalloc/cudaFree per request; idle buffers
// are evicted (least recently returned first) when the cache would exceed its byte budget.
#ifndef CUIMG_COMMON_DEVICE_BUFFER_CACHE_H_
#define CUIMG_COMMON_DEVICE_BUFFER_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>

#include "absl/status/statusor.h"
#include "cuimg/common/device_buffer.h"

namespace cuimg {

class DeviceBufferCache {
 public:
  struct Stats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;
    std::size_t idle_bytes = 0;    // cached, free for reuse
    std::size_t in_use_bytes = 0;  // leased out
  };

  // A leased buffer; returns to the cache when destroyed. Move-only. The holder must only drop it
  // once the device no longer uses the memory (after synchronizing the stream that used it).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    void* data() const { return buffer_.data(); }
    std::size_t size() const { return buffer_.size(); }

   private:
    friend class DeviceBufferCache;
    Lease(DeviceBufferCache* cache, DeviceBuffer buffer)
        : cache_(cache), buffer_(std::move(buffer)) {}
    DeviceBufferCache* cache_ = nullptr;
    DeviceBuffer buffer_;
  };

  // `device` is the CUDA ordinal allocations are made on; the caller sets it current.
  // budget_bytes bounds idle + in-use bytes; 0 means no caching (every lease is a fresh
  // cudaMalloc). limit_bytes caps the bytes leased at once (0: no cap but the device's memory).
  DeviceBufferCache(int device, std::size_t budget_bytes, std::size_t limit_bytes = 0);
  ~DeviceBufferCache();
  DeviceBufferCache(const DeviceBufferCache&) = delete;
  DeviceBufferCache& operator=(const DeviceBufferCache&) = delete;

  // A buffer of at least `bytes` (0 gives an empty lease). RESOURCE_EXHAUSTED when the lease would
  // pass limit_bytes (checked before any CUDA call), or when the device is out of memory even after
  // evicting every idle buffer. The calling thread's current device must be this cache's device.
  absl::StatusOr<Lease> Acquire(std::size_t bytes);
  // Frees every idle buffer.
  void Trim();
  Stats stats() const;
  int device() const { return device_; }

 private:
  void Return(DeviceBuffer buffer);
  // Frees idle buffers, least recently returned first, until `bytes` more fit the budget.
  void EvictLocked(std::size_t bytes);

  const int device_;
  const std::size_t budget_bytes_;
  const std::size_t limit_bytes_;
  mutable std::mutex mu_;
  std::list<DeviceBuffer> idle_;  // most recently returned at the front
  Stats stats_;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_DEVICE_BUFFER_CACHE_H_
