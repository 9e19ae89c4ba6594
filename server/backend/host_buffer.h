// Host memory that carries one message's pixels between gRPC and a backend: a request's inline
// image, gathered from the received bytes, or a result that gRPC then sends without copying
// (wire_pixels.h).
#ifndef CUIMG_SERVER_HOST_BUFFER_H_
#define CUIMG_SERVER_HOST_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace cuimg {

// Uninitialized when handed out.
class HostBuffer {
 public:
  virtual ~HostBuffer() = default;
  virtual void* data() const = 0;
  virtual std::size_t size() const = 0;
};

// The pinned pool behind Backend::AllocateHostBuffer (CUDA only): bytes of buffers leased and
// idle, leases by outcome (a refusal means the budget was spent and the heap served).
struct HostBufferPoolStats {
  bool pinned = false;  // false: the backend hands out heap memory only
  std::uint64_t used = 0;
  std::uint64_t cached = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t refusals = 0;
};

// `bytes` of ordinary heap memory (what a backend gives when it has nothing better).
std::unique_ptr<HostBuffer> HeapHostBuffer(std::size_t bytes);

}  // namespace cuimg

#endif  // CUIMG_SERVER_HOST_BUFFER_H_
