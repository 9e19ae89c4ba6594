// Keeps a client from killing the server by shrinking a shared-memory object it registered.
//
// POSIX shared-memory objects cannot be sealed (seals need memfd_create and passing the file
// descriptor, which gRPC over TCP cannot do), so the owner may ftruncate an object the server has
// mapped; the server's next access to a page past the new end then raises SIGBUS, whose default
// action ends the process. As Wayland compositors do for wl_shm, one process-wide SIGBUS handler
// looks the faulting address up among the guarded mappings; when it lies in one, the handler maps
// anonymous zero pages over that whole mapping (the faulting instruction then retries and succeeds)
// and marks the mapping faulted, for the request to fail instead. Any other SIGBUS goes to the
// handler installed before ours, or to the default action (the process dies as it would have).
#ifndef CUIMG_SERVER_SHARED_MEMORY_FAULT_GUARD_H_
#define CUIMG_SERVER_SHARED_MEMORY_FAULT_GUARD_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"

namespace cuimg {

// Mappings guarded at once, across every identity (the handler must search a fixed table: it may
// not allocate or lock).
inline constexpr std::size_t kMaxGuardedMappings = 4096;

// One guarded mapping, from Guard until destruction.
class MappingFaultGuard {
 public:
  // Guards the mapping [data, data + bytes), which must stay mapped until this is destroyed, and
  // installs the SIGBUS handler on first use. RESOURCE_EXHAUSTED (naming "key") when
  // kMaxGuardedMappings mappings are guarded already; INTERNAL when the handler cannot be set.
  static absl::StatusOr<std::unique_ptr<MappingFaultGuard>> Guard(void* data, std::size_t bytes);
  ~MappingFaultGuard();  // the mapping is no longer looked up; unmap it after this
  MappingFaultGuard(const MappingFaultGuard&) = delete;
  MappingFaultGuard& operator=(const MappingFaultGuard&) = delete;

  // True once an access faulted and the handler replaced the mapping with zero pages: the
  // object's bytes are no longer reachable through it. Async-signal-safe.
  bool faulted() const;

 private:
  explicit MappingFaultGuard(std::size_t slot) : slot_(slot) {}
  const std::size_t slot_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_SHARED_MEMORY_FAULT_GUARD_H_
