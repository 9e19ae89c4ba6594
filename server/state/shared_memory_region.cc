#include "server/state/shared_memory_region.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/observability/log.h"

namespace cuimg {

absl::Status ValidateSharedMemoryKey(absl::string_view key, absl::string_view field) {
  if (key.size() < 2 || key.size() > 255 || key[0] != '/') {
    return InvalidFieldError(ErrorReason::kInvalidFormat, field,
                             absl::StrCat("must be \"/\" followed by 1 to 254 characters, got ",
                                          key.size(), " characters"));
  }
  for (char c : key.substr(1)) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return InvalidFieldError(ErrorReason::kInvalidFormat, field,
                               "only [A-Za-z0-9._-] may follow the leading \"/\"");
    }
  }
  if (key == "/." || key == "/..") {
    return InvalidFieldError(ErrorReason::kInvalidFormat, field,
                             absl::StrCat("\"", key, "\" is not an object"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::Map(const std::string& key,
                                                                            std::uint64_t bytes,
                                                                            Backend* backend) {
  // O_NOFOLLOW: the name resolves in /dev/shm and must not lead out of it.
  const int fd = shm_open(key.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) {
    const int error = errno;
    const std::string what = absl::StrCat("shm_open(\"", key, "\"): ", std::strerror(error));
    if (error == ENOENT) {
      return MakeError(absl::StatusCode::kNotFound, ErrorReason::kSharedMemoryNotFound, "key",
                       what);
    }
    if (error == EACCES || error == EPERM) {
      return MakeError(absl::StatusCode::kPermissionDenied, ErrorReason::kPermissionDenied, "key",
                       what);
    }
    return InvalidFieldError(ErrorReason::kSharedMemoryNotFound, "key", what);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidFieldError(ErrorReason::kSharedMemoryNotFound, "key",
                             absl::StrCat("\"", key, "\" is not a shared-memory object"));
  }
  if (static_cast<std::uint64_t>(st.st_size) < bytes) {
    close(fd);
    return InvalidFieldError(
        ErrorReason::kSharedMemoryTooSmall, "byte_size",
        absl::StrCat(bytes, " bytes, but \"", key, "\" holds only ", st.st_size));
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int error = errno;
    close(fd);
    const std::string what =
        absl::StrCat("mmap(\"", key, "\", ", bytes, "): ", std::strerror(error));
    return error == ENOMEM
               ? MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "", what)
               : absl::InternalError(what);
  }
  // Guarded before anything can touch the pages, so that no access to them can fault fatally.
  absl::StatusOr<std::unique_ptr<MappingFaultGuard>> guard = MappingFaultGuard::Guard(data, bytes);
  if (!guard.ok()) {
    munmap(data, bytes);
    close(fd);
    return guard.status();
  }
  const SharedMemoryObjectId object{st.st_dev, st.st_ino};
  auto region =
      std::unique_ptr<SharedMemoryRegion>(new SharedMemoryRegion(key, fd, object, data, bytes));
  region->guard_ = *std::move(guard);
  absl::StatusOr<std::unique_ptr<HostMemoryPin>> pin = backend->PinHostMemory(data, bytes);
  if (pin.ok()) {
    region->pin_ = *std::move(pin);
  } else {
    Log(LogLevel::kWarning, "shared memory \"", key,
        "\" stays pageable (copies are staged): ", pin.status().ToString());
  }
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() {
  // The driver lets go of the pages first. After the fault handler replaced the mapping it holds
  // pages the object no longer has; unregistering them then may fail, which is harmless.
  pin_.reset();
  guard_.reset();  // before munmap: the address range may be reused by the next mapping
  if (munmap(data_, size_) != 0) {
    Log(LogLevel::kWarning, "munmap of shared memory \"", key_, "\": ", std::strerror(errno));
  }
  close(fd_);
}

absl::StatusOr<std::uint8_t*> SharedMemoryRegion::Span(std::uint64_t offset, std::uint64_t bytes,
                                                       absl::string_view field) const {
  if (offset > size_ || bytes > size_ - offset) {
    return InvalidFieldError(ErrorReason::kSharedMemoryTooSmall, field,
                             absl::StrCat("bytes [", offset, ", ", offset, " + ", bytes,
                                          ") pass the region's end at ", size_));
  }
  CUIMG_RETURN_IF_ERROR(CheckIntact(field));
  return static_cast<std::uint8_t*>(data_) + offset;
}

absl::Status SharedMemoryRegion::CheckIntact(absl::string_view field) const {
  if (!shrunk_.load(std::memory_order_acquire)) {
    struct stat st {};
    const bool faulted = guard_->faulted();
    const bool shrunk =
        faulted || fstat(fd_, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < size_;
    if (!shrunk) return absl::OkStatus();
    // faulted: the server touched the missing pages and the guard swapped in zero pages.
    if (!shrunk_.exchange(true)) {
      Log(LogLevel::kWarning, "event=shared_memory_shrunk key=\"", key_,
          "\" registered_bytes=", size_, " faulted=", faulted ? "true" : "false",
          " (refused until unregistered)");
    }
  }
  return MakeError(
      absl::StatusCode::kFailedPrecondition, ErrorReason::kSharedMemoryShrunk, field,
      absl::StrCat("the shared-memory object \"", key_, "\" was shrunk below its registered ",
                   size_, " bytes while registered; unregister it"));
}

bool SharedBytesOverlap(const SharedMemoryRegion& a, std::uint64_t a_offset, std::uint64_t a_bytes,
                        const SharedMemoryRegion& b, std::uint64_t b_offset,
                        std::uint64_t b_bytes) {
  if (!(a.object() == b.object())) return false;
  return a_offset < b_offset + b_bytes && b_offset < a_offset + a_bytes;
}

}  // namespace cuimg
