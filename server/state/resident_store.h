// ResidentStore: images and volumes kept on the server between requests, by handle. Each object
// belongs to one caller identity, is invisible to others, expires after its TTL without use, and
// counts against the identity's byte budget and the server-wide cap (the identity's least recently
// used objects are evicted to make room). Every eviction is logged, counted by reason, and
// remembered for a while, so that the owner's next use of the handle learns why it is gone.
#ifndef CUIMG_SERVER_RESIDENT_STORE_H_
#define CUIMG_SERVER_RESIDENT_STORE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/types.pb.h"
#include "server/backend/backend.h"

namespace cuimg {

struct StoredImage {
  Image image;
  v1::Spacing spacing;
};

enum class ResidentKind { kImage, kMesh };

struct ResidentInfo {
  std::string handle;
  ResidentKind kind = ResidentKind::kImage;
  // Images.
  PixelType type = PixelType::kU8;
  Extent extent;
  int channels = 1;
  // Meshes.
  std::uint64_t vertex_count = 0;
  std::uint64_t triangle_count = 0;
  std::uint64_t size_bytes = 0;
  std::uint32_t ttl_seconds = 0;
  int device = -1;  // where a mesh lives; -1 for host memory
};

struct ResidentStoreOptions {
  std::uint64_t budget_bytes_per_identity = std::uint64_t{4} << 30;
  std::uint32_t default_ttl_seconds = 600;
  std::uint32_t max_ttl_seconds = 86400;
  // Objects per identity; the least recently used is evicted to make room for another.
  std::uint32_t max_objects_per_identity = 4096;
  // Bytes of every identity's objects together; 0: no cap. Room is made only by evicting the
  // storing identity's own objects, never another's.
  std::uint64_t max_total_bytes = 0;
};

// Why an object left the store without its owner releasing it.
enum class EvictionReason {
  kTtl,        // unused for its TTL
  kBudget,     // least recently used, to fit the identity's byte budget
  kCount,      // least recently used, beyond the identity's object count
  kServerCap,  // least recently used, to fit the server-wide byte cap
};
inline constexpr int kEvictionReasons = 4;
// "ttl", "budget", "count", "server_cap": the metric label and the log's reason field.
absl::string_view EvictionReasonName(EvictionReason reason);

class ResidentStore {
 public:
  using Clock = std::function<absl::Time()>;
  explicit ResidentStore(
      ResidentStoreOptions options, Clock clock = [] { return absl::Now(); });

  // Stores `image` for `identity`; ttl 0 means the default. INVALID_ARGUMENT (LIMIT_EXCEEDED
  // naming "ttl_seconds") for a TTL over the maximum; RESOURCE_EXHAUSTED as CheckRoom says. Older
  // objects of the identity are evicted (least recently used first) to make room, in bytes, in
  // count and under the server-wide cap.
  absl::StatusOr<ResidentInfo> Put(absl::string_view identity,
                                   std::shared_ptr<const StoredImage> image,
                                   std::uint32_t ttl_seconds);
  absl::StatusOr<ResidentInfo> PutMesh(absl::string_view identity,
                                       std::shared_ptr<const BackendMesh> mesh,
                                       std::uint32_t ttl_seconds);
  // OK when an object of `size` bytes could be stored for `identity` now (evicting its own
  // objects); else RESOURCE_EXHAUSTED, naming no field: the object alone exceeds the identity's
  // budget or the server-wide cap (LIMIT_EXCEEDED: never storable, size > max_object_bytes()),
  // or other identities' objects leave too little of the server-wide cap (OVERLOADED: storable
  // later). For refusing an upload before its
  // bytes arrive; Put and PutMesh apply the same rule.
  absl::Status CheckRoom(absl::string_view identity, std::uint64_t size);
  // The largest object the store could ever hold.
  std::uint64_t max_object_bytes() const;
  // NOT_FOUND (HANDLE_NOT_FOUND) when the handle does not exist, expired, or belongs to another
  // identity (saying, to its owner, when and why an object was evicted); INVALID_ARGUMENT
  // (OBJECT_KIND_MISMATCH) when it names a mesh. The errors name no field: the caller knows
  // which request field holds the handle (AtField).
  absl::StatusOr<std::shared_ptr<const StoredImage>> Get(absl::string_view identity,
                                                         absl::string_view handle);
  // Likewise for meshes (INVALID_ARGUMENT when the handle names an image).
  absl::StatusOr<std::shared_ptr<const BackendMesh>> GetMesh(absl::string_view identity,
                                                             absl::string_view handle);
  absl::StatusOr<ResidentInfo> Describe(absl::string_view identity, absl::string_view handle);
  absl::Status Release(absl::string_view identity, absl::string_view handle);
  std::vector<ResidentInfo> List(absl::string_view identity);
  std::uint64_t UsedBytes(absl::string_view identity);
  std::uint64_t budget_bytes() const { return options_.budget_bytes_per_identity; }
  // Objects evicted for room or by TTL since start: all, or for one reason.
  std::uint64_t evictions() const;
  std::uint64_t evictions(EvictionReason reason) const;
  struct Totals {
    std::uint64_t images = 0;
    std::uint64_t meshes = 0;
    std::uint64_t bytes = 0;
  };
  // Every identity's objects together (expired ones are dropped first).
  Totals totals();

 private:
  struct Entry {
    std::string identity;
    std::shared_ptr<const StoredImage> image;  // set for images
    std::shared_ptr<const BackendMesh> mesh;   // set for meshes
    ResidentInfo info;
    absl::Time last_used;
  };
  // What an owner is told about an evicted handle.
  struct Tombstone {
    std::string handle;
    absl::Time when;
    std::string why;
  };
  // Tombstones kept per identity (the most recent evictions).
  static constexpr std::size_t kTombstonesPerIdentity = 64;

  absl::StatusOr<ResidentInfo> Insert(absl::string_view identity, Entry entry,
                                      std::uint32_t ttl_seconds);
  absl::Status CheckRoomLocked(absl::string_view identity, std::uint64_t size) const;
  // The live entry for (identity, handle), its last use refreshed; NOT_FOUND otherwise.
  absl::StatusOr<Entry*> FindLocked(absl::string_view identity, absl::string_view handle);
  // The NOT_FOUND for a handle `identity` does not hold: why, if it was evicted.
  absl::Status NotFoundLocked(absl::string_view identity, absl::string_view handle,
                              absl::Time now) const;
  void ExpireLocked(absl::Time now);
  std::uint64_t UsedLocked(absl::string_view identity) const;
  std::uint64_t TotalLocked() const;
  std::size_t CountLocked(absl::string_view identity) const;
  // Drops the identity's least recently used object; false when it has none.
  bool EvictOldestLocked(absl::string_view identity, EvictionReason reason, absl::Time now);
  // Erases `it`, logging, counting and remembering the eviction; returns the next entry.
  std::map<std::string, Entry, std::less<>>::iterator EvictLocked(
      std::map<std::string, Entry, std::less<>>::iterator it, EvictionReason reason,
      absl::Time now);
  std::string NewHandleLocked(ResidentKind kind);

  const ResidentStoreOptions options_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, std::deque<Tombstone>, std::less<>> tombstones_;
  std::mt19937_64 rng_;
  std::array<std::uint64_t, kEvictionReasons> evictions_{};
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_RESIDENT_STORE_H_
