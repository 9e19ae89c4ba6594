// SharedMemoryRegistry: the shared-memory regions clients registered, by handle. Each region
// belongs to one identity and is invisible to others (NOT_FOUND, as for a handle that never
// existed); each identity has caps on its regions' count and bytes. Requests hold a region by
// shared_ptr, so unregistering one in use unmaps it only when the last such request is done.
#ifndef CUIMG_SERVER_SHARED_MEMORY_REGISTRY_H_
#define CUIMG_SERVER_SHARED_MEMORY_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend.h"
#include "server/server_options.h"
#include "server/shared_memory_region.h"

namespace cuimg {

struct SharedMemoryInfo {
  std::string handle;
  std::string key;
  std::uint64_t byte_size = 0;
  bool device_mapped = false;
};

class SharedMemoryRegistry {
 public:
  // `backend` page-locks new regions and must outlive the registry.
  SharedMemoryRegistry(const SharedMemoryOptions& options, Backend* backend);

  // Maps `key` for `identity`. INVALID_ARGUMENT naming "key" or "byte_size" for a bad name or
  // size; RESOURCE_EXHAUSTED past the identity's count or byte cap; SharedMemoryRegion::Map's
  // errors for the object itself.
  absl::StatusOr<SharedMemoryInfo> Register(absl::string_view identity, const std::string& key,
                                            std::uint64_t byte_size);
  // The region, held by the caller; NOT_FOUND when unknown or another identity's.
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> Get(absl::string_view identity,
                                                                absl::string_view handle) const;
  // NOT_FOUND as for Get.
  absl::Status Unregister(absl::string_view identity, absl::string_view handle);
  std::vector<SharedMemoryInfo> List(absl::string_view identity) const;
  std::uint64_t UsedBytes(absl::string_view identity) const;
  const SharedMemoryOptions& options() const { return options_; }
  struct Totals {
    std::uint64_t regions = 0;
    std::uint64_t bytes = 0;
  };
  // Every identity's regions together.
  Totals totals() const;

 private:
  struct Entry {
    std::string identity;
    SharedMemoryInfo info;
    std::shared_ptr<const SharedMemoryRegion> region;
  };
  const Entry* FindLocked(absl::string_view identity, absl::string_view handle) const;
  std::uint64_t UsedLocked(absl::string_view identity, std::size_t* count) const;

  const SharedMemoryOptions options_;
  Backend* backend_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;  // by handle
  std::mt19937_64 rng_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_SHARED_MEMORY_REGISTRY_H_
