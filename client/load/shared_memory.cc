#include "client/load/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedMemoryObject>> SharedMemoryObject::Create(
    std::size_t bytes, const std::string& tag, const std::string& key_prefix) {
  static std::atomic<int> counter{0};
  std::string key = absl::StrCat(key_prefix.empty() ? "/" : key_prefix, "cuimg-", tag, "-",
                                 getpid(), "-", counter++);
  const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("shm_open(", key, "): ", std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(key.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("ftruncate(", key, ", ", bytes, "): ", std::strerror(error)));
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int error = errno;
    close(fd);
    shm_unlink(key.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("mmap(", key, "): ", std::strerror(error)));
  }
  return std::unique_ptr<SharedMemoryObject>(
      new SharedMemoryObject(std::move(key), fd, static_cast<std::uint8_t*>(data), bytes));
}

SharedMemoryObject::~SharedMemoryObject() {
  munmap(data_, size_);
  close(fd_);
  shm_unlink(key_.c_str());
}

absl::StatusOr<std::string> KeyPrefix(v1::Imaging::Stub& stub,
                                      const ConnectionOptions& connection) {
  grpc::ClientContext ctx;
  PrepareContext(connection, &ctx);
  v1::ListSharedMemoryResponse response;
  if (absl::Status s = FromGrpc(stub.ListSharedMemory(&ctx, {}, &response), "ListSharedMemory");
      !s.ok()) {
    return s;
  }
  return response.key_prefix();
}

absl::StatusOr<std::string> RegisterRegion(v1::Imaging::Stub& stub,
                                           const ConnectionOptions& connection,
                                           const SharedMemoryObject& object) {
  grpc::ClientContext ctx;
  PrepareContext(connection, &ctx);
  v1::RegisterSharedMemoryRequest request;
  request.set_key(object.key());
  request.set_byte_size(object.size());
  v1::RegisterSharedMemoryResponse response;
  if (absl::Status s =
          FromGrpc(stub.RegisterSharedMemory(&ctx, request, &response), "RegisterSharedMemory");
      !s.ok()) {
    return s;
  }
  return response.region().handle();
}

absl::Status UnregisterRegion(v1::Imaging::Stub& stub, const ConnectionOptions& connection,
                              const std::string& handle) {
  grpc::ClientContext ctx;
  PrepareContext(connection, &ctx);
  v1::UnregisterSharedMemoryRequest request;
  request.set_handle(handle);
  v1::UnregisterSharedMemoryResponse response;
  return FromGrpc(stub.UnregisterSharedMemory(&ctx, request, &response), "UnregisterSharedMemory");
}

}  // namespace cuimg
