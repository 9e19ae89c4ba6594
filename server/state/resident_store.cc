#include "server/state/resident_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/observability/log.h"
#include "server/security/untrusted_text.h"

namespace cuimg {

absl::string_view EvictionReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kTtl:
      return "ttl";
    case EvictionReason::kBudget:
      return "budget";
    case EvictionReason::kCount:
      return "count";
    case EvictionReason::kServerCap:
      return "server_cap";
  }
  return "unknown";
}

ResidentStore::ResidentStore(ResidentStoreOptions options, Clock clock)
    : options_(options), clock_(std::move(clock)), rng_(std::random_device{}()) {}

absl::StatusOr<ResidentInfo> ResidentStore::Put(absl::string_view identity,
                                                std::shared_ptr<const StoredImage> image,
                                                std::uint32_t ttl_seconds) {
  Entry entry;
  entry.info.kind = ResidentKind::kImage;
  entry.info.type = image->image.type();
  entry.info.extent = image->image.extent();
  entry.info.channels = image->image.channels();
  entry.info.size_bytes = image->image.size_bytes();
  entry.image = std::move(image);
  return Insert(identity, std::move(entry), ttl_seconds);
}

absl::StatusOr<ResidentInfo> ResidentStore::PutMesh(absl::string_view identity,
                                                    std::shared_ptr<const BackendMesh> mesh,
                                                    std::uint32_t ttl_seconds) {
  Entry entry;
  entry.info.kind = ResidentKind::kMesh;
  entry.info.vertex_count = mesh->vertex_count();
  entry.info.triangle_count = mesh->triangle_count();
  entry.info.size_bytes = mesh->bytes();
  entry.info.device = mesh->device();
  entry.mesh = std::move(mesh);
  return Insert(identity, std::move(entry), ttl_seconds);
}

absl::StatusOr<ResidentInfo> ResidentStore::Insert(absl::string_view identity, Entry entry,
                                                   std::uint32_t ttl_seconds) {
  if (ttl_seconds > options_.max_ttl_seconds) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, "ttl_seconds",
                             absl::StrCat(ttl_seconds, " exceeds the server maximum ",
                                          options_.max_ttl_seconds, " (resident_max_ttl_seconds)"));
  }
  const std::uint64_t size = entry.info.size_bytes;
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_();
  ExpireLocked(now);
  // Checked before evicting anything, so that a refused object costs the identity nothing.
  CUIMG_RETURN_IF_ERROR(CheckRoomLocked(identity, size));
  // Evict this identity's least recently used objects until the new one fits; CheckRoomLocked
  // guarantees that evicting all of them would.
  while (UsedLocked(identity) + size > options_.budget_bytes_per_identity &&
         EvictOldestLocked(identity, EvictionReason::kBudget, now)) {
  }
  while (options_.max_objects_per_identity > 0 &&
         CountLocked(identity) >= options_.max_objects_per_identity &&
         EvictOldestLocked(identity, EvictionReason::kCount, now)) {
  }
  while (options_.max_total_bytes > 0 && TotalLocked() + size > options_.max_total_bytes &&
         EvictOldestLocked(identity, EvictionReason::kServerCap, now)) {
  }
  entry.identity = std::string(identity);
  entry.info.handle = NewHandleLocked(entry.info.kind);
  entry.info.ttl_seconds = ttl_seconds == 0 ? options_.default_ttl_seconds : ttl_seconds;
  entry.last_used = now;
  ResidentInfo info = entry.info;
  entries_.emplace(info.handle, std::move(entry));
  return info;
}

absl::Status ResidentStore::CheckRoom(absl::string_view identity, std::uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_());
  return CheckRoomLocked(identity, size);
}

std::uint64_t ResidentStore::max_object_bytes() const {
  return options_.max_total_bytes == 0
             ? options_.budget_bytes_per_identity
             : std::min(options_.budget_bytes_per_identity, options_.max_total_bytes);
}

absl::Status ResidentStore::CheckRoomLocked(absl::string_view identity, std::uint64_t size) const {
  if (size > options_.budget_bytes_per_identity) {
    return MakeError(
        absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, "",
        absl::StrCat("resident object of ", size, " bytes exceeds the per-client budget of ",
                     options_.budget_bytes_per_identity, " bytes (resident_budget_bytes)"));
  }
  if (options_.max_total_bytes == 0) return absl::OkStatus();
  if (size > options_.max_total_bytes) {
    return MakeError(
        absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, "",
        absl::StrCat("resident object of ", size, " bytes exceeds the server-wide cap of ",
                     options_.max_total_bytes, " bytes (resident_max_total_bytes)"));
  }
  const std::uint64_t others = TotalLocked() - UsedLocked(identity);
  if (others + size > options_.max_total_bytes) {
    return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "",
                     absl::StrCat("server resident memory full: other clients' objects hold ",
                                  others, " of ", options_.max_total_bytes,
                                  " bytes (resident_max_total_bytes), a resident object of ", size,
                                  " bytes does not fit; retry later"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResidentStore::Entry*> ResidentStore::FindLocked(absl::string_view identity,
                                                                absl::string_view handle) {
  const absl::Time now = clock_();
  ExpireLocked(now);
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.identity != identity) {
    return NotFoundLocked(identity, handle, now);
  }
  it->second.last_used = now;
  return &it->second;
}

absl::Status ResidentStore::NotFoundLocked(absl::string_view identity, absl::string_view handle,
                                           absl::Time now) const {
  // Tombstones are per identity: another identity's handle looks exactly like a missing one.
  auto list = tombstones_.find(identity);
  if (list != tombstones_.end()) {
    for (const Tombstone& t : list->second) {
      if (t.handle != handle) continue;
      return MakeError(absl::StatusCode::kNotFound, ErrorReason::kHandleNotFound, "",
                       absl::StrCat("resident object ", QuoteClientValue(handle), " was evicted ",
                                    absl::ToInt64Seconds(now - t.when), " s ago: ", t.why));
    }
  }
  return MakeError(absl::StatusCode::kNotFound, ErrorReason::kHandleNotFound, "",
                   absl::StrCat("no resident object ", QuoteClientValue(handle)));
}

absl::StatusOr<std::shared_ptr<const StoredImage>> ResidentStore::Get(absl::string_view identity,
                                                                      absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  CUIMG_ASSIGN_OR_RETURN(Entry * entry, FindLocked(identity, handle));
  if (entry->image == nullptr) {
    return InvalidFieldError(ErrorReason::kObjectKindMismatch, "",
                             absl::StrCat(QuoteClientValue(handle), " is a mesh, not an image"));
  }
  return entry->image;
}

absl::StatusOr<std::shared_ptr<const BackendMesh>> ResidentStore::GetMesh(
    absl::string_view identity, absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  CUIMG_ASSIGN_OR_RETURN(Entry * entry, FindLocked(identity, handle));
  if (entry->mesh == nullptr) {
    return InvalidFieldError(ErrorReason::kObjectKindMismatch, "",
                             absl::StrCat(QuoteClientValue(handle), " is an image, not a mesh"));
  }
  return entry->mesh;
}

absl::StatusOr<ResidentInfo> ResidentStore::Describe(absl::string_view identity,
                                                     absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_();
  ExpireLocked(now);
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.identity != identity) {
    return NotFoundLocked(identity, handle, now);
  }
  return it->second.info;
}

absl::Status ResidentStore::Release(absl::string_view identity, absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_();
  ExpireLocked(now);
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.identity != identity) {
    return NotFoundLocked(identity, handle, now);
  }
  entries_.erase(it);
  return absl::OkStatus();
}

std::vector<ResidentInfo> ResidentStore::List(absl::string_view identity) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_());
  std::vector<ResidentInfo> out;
  for (const auto& [handle, entry] : entries_) {
    if (entry.identity == identity) out.push_back(entry.info);
  }
  return out;
}

std::uint64_t ResidentStore::UsedBytes(absl::string_view identity) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_());
  return UsedLocked(identity);
}

std::uint64_t ResidentStore::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t all = 0;
  for (std::uint64_t n : evictions_) all += n;
  return all;
}

std::uint64_t ResidentStore::evictions(EvictionReason reason) const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_[static_cast<int>(reason)];
}

ResidentStore::Totals ResidentStore::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_());
  Totals t;
  for (const auto& [handle, entry] : entries_) {
    ++(entry.mesh != nullptr ? t.meshes : t.images);
    t.bytes += entry.info.size_bytes;
  }
  return t;
}

void ResidentStore::ExpireLocked(absl::Time now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now - it->second.last_used > absl::Seconds(it->second.info.ttl_seconds)) {
      it = EvictLocked(it, EvictionReason::kTtl, now);
    } else {
      ++it;
    }
  }
}

std::uint64_t ResidentStore::UsedLocked(absl::string_view identity) const {
  std::uint64_t used = 0;
  for (const auto& [handle, entry] : entries_) {
    if (entry.identity == identity) used += entry.info.size_bytes;
  }
  return used;
}

std::uint64_t ResidentStore::TotalLocked() const {
  std::uint64_t total = 0;
  for (const auto& [handle, entry] : entries_) total += entry.info.size_bytes;
  return total;
}

std::size_t ResidentStore::CountLocked(absl::string_view identity) const {
  std::size_t count = 0;
  for (const auto& [handle, entry] : entries_) count += entry.identity == identity;
  return count;
}

bool ResidentStore::EvictOldestLocked(absl::string_view identity, EvictionReason reason,
                                      absl::Time now) {
  auto lru = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.identity != identity) continue;
    if (lru == entries_.end() || it->second.last_used < lru->second.last_used) lru = it;
  }
  if (lru == entries_.end()) return false;
  EvictLocked(lru, reason, now);
  return true;
}

std::map<std::string, ResidentStore::Entry, std::less<>>::iterator ResidentStore::EvictLocked(
    std::map<std::string, Entry, std::less<>>::iterator it, EvictionReason reason, absl::Time now) {
  const Entry& e = it->second;
  std::string why;
  switch (reason) {
    case EvictionReason::kTtl:
      why = absl::StrCat("unused for its TTL of ", e.info.ttl_seconds, " s");
      break;
    case EvictionReason::kBudget:
      why = absl::StrCat("least recently used, evicted to fit the client's resident budget of ",
                         options_.budget_bytes_per_identity, " bytes (resident_budget_bytes)");
      break;
    case EvictionReason::kCount:
      why = absl::StrCat("least recently used, evicted beyond the client's ",
                         options_.max_objects_per_identity, " objects (resident_max_objects)");
      break;
    case EvictionReason::kServerCap:
      why = absl::StrCat("least recently used, evicted to fit the server-wide cap of ",
                         options_.max_total_bytes, " bytes (resident_max_total_bytes)");
      break;
  }
  LogEvent(LogLevel::kInfo, "resident_evicted",
           {{"identity", e.identity},
            {"handle", e.info.handle},
            {"kind", e.mesh != nullptr ? "mesh" : "image"},
            {"bytes", e.info.size_bytes},
            {"reason", EvictionReasonName(reason)}});
  ++evictions_[static_cast<int>(reason)];
  std::deque<Tombstone>& list = tombstones_[e.identity];
  if (list.size() == kTombstonesPerIdentity) list.pop_front();
  list.push_back(Tombstone{e.info.handle, now, std::move(why)});
  return entries_.erase(it);
}

std::string ResidentStore::NewHandleLocked(ResidentKind kind) {
  // 128 random bits: handles cannot be guessed.
  return absl::StrFormat("%s-%016x%016x", kind == ResidentKind::kMesh ? "mesh" : "img", rng_(),
                         rng_());
}

}  // namespace cuimg
