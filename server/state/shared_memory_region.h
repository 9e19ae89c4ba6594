// SharedMemoryRegion: one client's POSIX shared-memory object mapped into the server (and
// page-locked for the GPUs where the backend can), owned for as long as requests use it. The
// mapping is fault-guarded (shared_memory_fault_guard.h): a client that shrinks the object makes
// the region fail its requests, not the server fault.
#ifndef CUIMG_SERVER_SHARED_MEMORY_REGION_H_
#define CUIMG_SERVER_SHARED_MEMORY_REGION_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/backend.h"
#include "server/state/shared_memory_fault_guard.h"

namespace cuimg {

// OK for "/" followed by 1 to 254 characters from [A-Za-z0-9._-]; INVALID_ARGUMENT naming `field`
// otherwise (the name is the client's; it must not reach elsewhere in /dev/shm or the file system).
absl::Status ValidateSharedMemoryKey(absl::string_view key, absl::string_view field);

// Which object a region maps: one object may be mapped at several addresses, or named twice.
struct SharedMemoryObjectId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const SharedMemoryObjectId& o) const {
    return device == o.device && inode == o.inode;
  }
};

class SharedMemoryRegion {
 public:
  // Opens `key` (already validated) read-write and maps its first `bytes` bytes shared.
  // NOT_FOUND (SHARED_MEMORY_NOT_FOUND naming "key") when there is no such object;
  // PERMISSION_DENIED when the server may not open it; INVALID_ARGUMENT when it is not a plain
  // shared-memory object (SHARED_MEMORY_NOT_FOUND naming "key") or shorter than `bytes`
  // (SHARED_MEMORY_TOO_SMALL naming "byte_size"); RESOURCE_EXHAUSTED (OVERLOADED) when the
  // server guards its most mappings already (kMaxGuardedMappings). The mapping is then offered to
  // `backend` for page-locking; a refusal leaves it pageable.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Map(const std::string& key,
                                                                 std::uint64_t bytes,
                                                                 Backend* backend);
  ~SharedMemoryRegion();  // unpins, unguards, unmaps, closes; errors are logged, never fatal
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const std::string& key() const { return key_; }
  std::uint64_t size() const { return size_; }
  bool device_mapped() const { return pin_ != nullptr; }
  const SharedMemoryObjectId& object() const { return object_; }

  // The bytes [offset, offset + bytes) of the mapping: INVALID_ARGUMENT (SHARED_MEMORY_TOO_SMALL)
  // naming `field` when they pass its end, else CheckIntact's answer. The memory is the client's
  // too; the server reads and writes it without further checks (a shrink mid-request is caught by
  // the fault guard).
  absl::StatusOr<std::uint8_t*> Span(std::uint64_t offset, std::uint64_t bytes,
                                     absl::string_view field) const;

  // OK while the object has never been seen shorter than the registered size. Once it has (an
  // access faulted, or the object's size says so), FAILED_PRECONDITION (SHARED_MEMORY_SHRUNK)
  // naming `field` and the key,
  // now and for every later call: the mapping may hold zero pages instead of the client's. A
  // request checks this after its copies and kernels, since the object may shrink at any time;
  // on the CUDA backend a page-locked region's DMA never faults, so the size is checked too.
  absl::Status CheckIntact(absl::string_view field) const;

 private:
  SharedMemoryRegion(std::string key, int fd, SharedMemoryObjectId object, void* data,
                     std::uint64_t size)
      : key_(std::move(key)), fd_(fd), object_(object), data_(data), size_(size) {}

  const std::string key_;
  const int fd_;
  const SharedMemoryObjectId object_;
  void* const data_;
  const std::uint64_t size_;
  std::unique_ptr<MappingFaultGuard> guard_;
  std::unique_ptr<HostMemoryPin> pin_;
  mutable std::atomic<bool> shrunk_{false};  // latched: a shrunk region stays refused
};

// True when bytes [a_offset, a_offset + a_bytes) of a's object and [b_offset, b_offset + b_bytes)
// of b's share a byte. Compares the objects, not addresses: one object may be mapped twice. The
// ranges must lie within their regions (Span checked them).
bool SharedBytesOverlap(const SharedMemoryRegion& a, std::uint64_t a_offset, std::uint64_t a_bytes,
                        const SharedMemoryRegion& b, std::uint64_t b_offset, std::uint64_t b_bytes);

}  // namespace cuimg

#endif  // CUIMG_SERVER_SHARED_MEMORY_REGION_H_
