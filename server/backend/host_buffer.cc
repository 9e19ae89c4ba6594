#include "server/backend/host_buffer.h"

#include <memory>

namespace cuimg {
namespace {

class HeapBuffer final : public HostBuffer {
 public:
  // new[] without () leaves the bytes uninitialized: every one is written before it is read.
  explicit HeapBuffer(std::size_t bytes) : data_(new char[bytes == 0 ? 1 : bytes]), size_(bytes) {}
  void* data() const override { return data_.get(); }
  std::size_t size() const override { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_;
};

}  // namespace

std::unique_ptr<HostBuffer> HeapHostBuffer(std::size_t bytes) {
  return std::make_unique<HeapBuffer>(bytes);
}

}  // namespace cuimg
