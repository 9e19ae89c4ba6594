// SharedMemoryRegistry: the shared-memory regions clients registered, by handle. Each region
// belongs to one identity and is invisible to others (NOT_FOUND, as for a handle that never
// existed); each identity has caps on its regions' count and bytes. Where callers have distinct
// identities, each may name only objects under its own key prefix, so no identity can map
// another's object; and an object is registered once at a time. Requests hold a region by
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
#include "server/backend/backend.h"
#include "server/server_options.h"
#include "server/state/shared_memory_region.h"

namespace cuimg {

// Whether object names are divided among identities.
enum class SharedMemoryKeys {
  // One namespace: every caller is the same identity ("anonymous"), so there is no one to keep
  // out.
  kShared,
  // Each identity names only objects under SharedMemoryKeyPrefix(identity).
  kPerIdentity,
};

// kPerIdentity when callers can be told apart (bearer tokens or client certificates), else
// kShared.
SharedMemoryKeys SharedMemoryKeysFor(const SecurityOptions& security);

// The start every object name of `identity` must have under kPerIdentity: "/<identity>." when the
// identity is 1 to 64 characters from [A-Za-z0-9_-], else "/." followed by the identity's bytes in
// lowercase hex and ".". Neither form can start another identity's (the first never holds a ".",
// the second starts with one), so one identity's prefix never admits another's objects. An
// identity whose prefix leaves no room in a 255-character key cannot register objects.
std::string SharedMemoryKeyPrefix(absl::string_view identity);

struct SharedMemoryInfo {
  std::string handle;
  std::string key;
  std::uint64_t byte_size = 0;
  bool device_mapped = false;
};

class SharedMemoryRegistry {
 public:
  // `backend` page-locks new regions and must outlive the registry.
  SharedMemoryRegistry(const SharedMemoryOptions& options, SharedMemoryKeys keys, Backend* backend);

  // Maps `key` for `identity`. INVALID_ARGUMENT naming "key" or "byte_size" for a bad name or
  // size; PERMISSION_DENIED naming "key" and the prefix when the name is outside the identity's
  // prefix (KeyPrefix); RESOURCE_EXHAUSTED past the identity's count or byte cap (QUOTA_EXCEEDED;
  // LIMIT_EXCEEDED for a size alone over the byte cap);
  // SharedMemoryRegion::Map's errors for the object itself; ALREADY_EXISTS naming "key" when the
  // object (by device and inode, whatever its name) is registered already, by anyone.
  absl::StatusOr<SharedMemoryInfo> Register(absl::string_view identity, const std::string& key,
                                            std::uint64_t byte_size);
  // The region, held by the caller; NOT_FOUND (SHARED_MEMORY_NOT_FOUND, naming no field: the
  // caller knows which request field holds the handle) when unknown or another identity's.
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> Get(absl::string_view identity,
                                                                absl::string_view handle) const;
  // NOT_FOUND as for Get.
  absl::Status Unregister(absl::string_view identity, absl::string_view handle);
  std::vector<SharedMemoryInfo> List(absl::string_view identity) const;
  std::uint64_t UsedBytes(absl::string_view identity) const;
  // The start `identity`'s object names must have: SharedMemoryKeyPrefix(identity) under
  // kPerIdentity, "" under kShared.
  std::string KeyPrefix(absl::string_view identity) const;
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
  const SharedMemoryKeys keys_;
  Backend* backend_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;  // by handle
  std::mt19937_64 rng_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_SHARED_MEMORY_REGISTRY_H_
