// DeviceBuffer: the owner of one device allocation. Move-only; the destructor frees quietly.
#ifndef CUIMG_COMMON_DEVICE_BUFFER_H_
#define CUIMG_COMMON_DEVICE_BUFFER_H_

#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"

namespace cuimg {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` on the current device (nothing for 0). RESOURCE_EXHAUSTED when out of memory.
  static absl::StatusOr<DeviceBuffer> Allocate(std::size_t bytes);

  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  template <typename T>
  T* As() const {
    return static_cast<T*>(data_);
  }
  // Gives up ownership; the caller must cudaFree the pointer.
  [[nodiscard]] void* release() {
    size_ = 0;
    return std::exchange(data_, nullptr);
  }

 private:
  DeviceBuffer(void* data, std::size_t size) : data_(data), size_(size) {}
  void Reset();

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// The owner of one pinned (page-locked) host allocation, for asynchronous copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static absl::StatusOr<PinnedBuffer> Allocate(std::size_t bytes);

  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { Reset(); }

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  PinnedBuffer(void* data, std::size_t size) : data_(data), size_(size) {}
  void Reset();

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// Existing host memory page-locked with cudaHostRegister (portable: for every device; mapped:
// kernels can write it in place, MappedDevicePointer) while this object lives. Move-only; the
// destructor unregisters quietly. The memory must stay mapped until then.
class HostRegistration {
 public:
  HostRegistration() = default;
  // INVALID_ARGUMENT/INTERNAL etc. from the driver when the range cannot be locked (e.g. a mapping
  // the driver refuses, or RLIMIT_MEMLOCK).
  static absl::StatusOr<HostRegistration> Register(void* data, std::size_t bytes);

  HostRegistration(HostRegistration&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)) {}
  HostRegistration& operator=(HostRegistration&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  ~HostRegistration() { Reset(); }

  void* data() const { return data_; }

 private:
  explicit HostRegistration(void* data) : data_(data) {}
  void Reset();
  void* data_ = nullptr;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_DEVICE_BUFFER_H_
