// SharedMemoryRegion: one client's POSIX shared-memory object mapped into the server (and
// page-locked for the GPUs where the backend can), owned for as long as requests use it.
#ifndef CUIMG_SERVER_SHARED_MEMORY_REGION_H_
#define CUIMG_SERVER_SHARED_MEMORY_REGION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend.h"

namespace cuimg {

// OK for "/" followed by 1 to 254 characters from [A-Za-z0-9._-]; INVALID_ARGUMENT naming `field`
// otherwise (the name is the client's; it must not reach elsewhere in /dev/shm or the file system).
absl::Status ValidateSharedMemoryKey(absl::string_view key, absl::string_view field);

class SharedMemoryRegion {
 public:
  // Opens `key` (already validated) read-write and maps its first `bytes` bytes shared.
  // NOT_FOUND when there is no such object; PERMISSION_DENIED when the server may not open it;
  // INVALID_ARGUMENT (naming "byte_size") when it is shorter than `bytes` or not a plain
  // shared-memory object. The mapping is then offered to `backend` for page-locking; a refusal
  // leaves it pageable.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Map(const std::string& key,
                                                                 std::uint64_t bytes,
                                                                 Backend* backend);
  ~SharedMemoryRegion();  // unpins, unmaps, closes
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const std::string& key() const { return key_; }
  std::uint64_t size() const { return size_; }
  bool device_mapped() const { return pin_ != nullptr; }

  // The bytes [offset, offset + bytes) of the mapping, checked to lie within it and that the object
  // still covers them (a client that shrank the object would make the server's accesses fault):
  // INVALID_ARGUMENT naming `field` when out of bounds, FAILED_PRECONDITION when shrunk.
  // The memory is the client's too; the server reads and writes it without further checks.
  absl::StatusOr<std::uint8_t*> Span(std::uint64_t offset, std::uint64_t bytes,
                                     absl::string_view field) const;

 private:
  SharedMemoryRegion(std::string key, int fd, void* data, std::uint64_t size)
      : key_(std::move(key)), fd_(fd), data_(data), size_(size) {}

  const std::string key_;
  const int fd_;
  void* const data_;
  const std::uint64_t size_;
  std::unique_ptr<HostMemoryPin> pin_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_SHARED_MEMORY_REGION_H_
