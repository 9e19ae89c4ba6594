// Local shared memory from the client's side: a POSIX shared-memory object this process creates
// (and unlinks when done), registered with a server on the same host so that requests carry a
// region and offset instead of pixels (shared_memory.proto).
#ifndef CUIMG_CLIENT_SHARED_MEMORY_H_
#define CUIMG_CLIENT_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/connection.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"

namespace cuimg {

class SharedMemoryObject {
 public:
  // A new object of `bytes` bytes named `key_prefix` + "cuimg-<tag>-<pid>-<n>", mapped read-write.
  // `key_prefix` is the server's for this caller (KeyPrefix); empty: "/".
  static absl::StatusOr<std::unique_ptr<SharedMemoryObject>> Create(std::size_t bytes,
                                                                    const std::string& tag,
                                                                    const std::string& key_prefix);
  ~SharedMemoryObject();  // unmaps, closes, unlinks
  SharedMemoryObject(const SharedMemoryObject&) = delete;
  SharedMemoryObject& operator=(const SharedMemoryObject&) = delete;

  const std::string& key() const { return key_; }
  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  SharedMemoryObject(std::string key, int fd, std::uint8_t* data, std::size_t size)
      : key_(std::move(key)), fd_(fd), data_(data), size_(size) {}
  const std::string key_;
  const int fd_;
  std::uint8_t* const data_;
  const std::size_t size_;
};

// The start the server requires of this caller's object names (ListSharedMemory's key_prefix;
// empty where the server does not tell callers apart), or the RPC's error.
absl::StatusOr<std::string> KeyPrefix(v1::Imaging::Stub& stub, const ConnectionOptions& connection);
// Registers `object` with the server; its region handle, or the RPC's error.
absl::StatusOr<std::string> RegisterRegion(v1::Imaging::Stub& stub,
                                           const ConnectionOptions& connection,
                                           const SharedMemoryObject& object);
absl::Status UnregisterRegion(v1::Imaging::Stub& stub, const ConnectionOptions& connection,
                              const std::string& handle);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_SHARED_MEMORY_H_
