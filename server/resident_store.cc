#include "server/resident_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuimg/common/status_macros.h"
#include "server/untrusted_text.h"

namespace cuimg {

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
    return absl::InvalidArgumentError(absl::StrCat("ttl_seconds: ", ttl_seconds,
                                                   " exceeds the server maximum ",
                                                   options_.max_ttl_seconds));
  }
  const std::uint64_t size = entry.info.size_bytes;
  if (size > options_.budget_bytes_per_identity) {
    return absl::ResourceExhaustedError(
        absl::StrCat("resident object of ", size, " bytes exceeds the per-client budget of ",
                     options_.budget_bytes_per_identity, " bytes"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_();
  ExpireLocked(now);
  // Evict this identity's least recently used objects until the new one fits.
  while (UsedLocked(identity) + size > options_.budget_bytes_per_identity) {
    EvictOldestLocked(identity);
  }
  while (options_.max_objects_per_identity > 0 &&
         CountLocked(identity) >= options_.max_objects_per_identity) {
    EvictOldestLocked(identity);
  }
  entry.identity = std::string(identity);
  entry.info.handle = NewHandleLocked(entry.info.kind);
  entry.info.ttl_seconds = ttl_seconds == 0 ? options_.default_ttl_seconds : ttl_seconds;
  entry.last_used = now;
  ResidentInfo info = entry.info;
  entries_.emplace(info.handle, std::move(entry));
  return info;
}

absl::StatusOr<ResidentStore::Entry*> ResidentStore::FindLocked(absl::string_view identity,
                                                                absl::string_view handle) {
  const absl::Time now = clock_();
  ExpireLocked(now);
  auto it = entries_.find(handle);
  // Another identity's handle looks exactly like a missing one.
  if (it == entries_.end() || it->second.identity != identity) {
    return absl::NotFoundError(absl::StrCat("no resident object ", QuoteClientValue(handle)));
  }
  it->second.last_used = now;
  return &it->second;
}

absl::StatusOr<std::shared_ptr<const StoredImage>> ResidentStore::Get(absl::string_view identity,
                                                                      absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  CUIMG_ASSIGN_OR_RETURN(Entry * entry, FindLocked(identity, handle));
  if (entry->image == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(QuoteClientValue(handle), " is a mesh, not an image"));
  }
  return entry->image;
}

absl::StatusOr<std::shared_ptr<const BackendMesh>> ResidentStore::GetMesh(
    absl::string_view identity, absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  CUIMG_ASSIGN_OR_RETURN(Entry * entry, FindLocked(identity, handle));
  if (entry->mesh == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(QuoteClientValue(handle), " is an image, not a mesh"));
  }
  return entry->mesh;
}

absl::StatusOr<ResidentInfo> ResidentStore::Describe(absl::string_view identity,
                                                     absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(clock_());
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.identity != identity) {
    return absl::NotFoundError(absl::StrCat("no resident object ", QuoteClientValue(handle)));
  }
  return it->second.info;
}

absl::Status ResidentStore::Release(absl::string_view identity, absl::string_view handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.identity != identity) {
    return absl::NotFoundError(absl::StrCat("no resident object ", QuoteClientValue(handle)));
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
  return evictions_;
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
      it = entries_.erase(it);
      ++evictions_;
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

std::size_t ResidentStore::CountLocked(absl::string_view identity) const {
  std::size_t count = 0;
  for (const auto& [handle, entry] : entries_) count += entry.identity == identity;
  return count;
}

void ResidentStore::EvictOldestLocked(absl::string_view identity) {
  auto lru = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.identity != identity) continue;
    if (lru == entries_.end() || it->second.last_used < lru->second.last_used) lru = it;
  }
  if (lru == entries_.end()) return;
  entries_.erase(lru);
  ++evictions_;
}

std::string ResidentStore::NewHandleLocked(ResidentKind kind) {
  // 128 random bits: handles cannot be guessed.
  return absl::StrFormat("%s-%016x%016x", kind == ResidentKind::kMesh ? "mesh" : "img", rng_(),
                         rng_());
}

}  // namespace cuimg
