#include "server/state/shared_memory_registry.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/security/untrusted_text.h"

namespace cuimg {

SharedMemoryKeys SharedMemoryKeysFor(const SecurityOptions& security) {
  return security.auth_tokens_file.empty() && security.tls_client_ca_file.empty()
             ? SharedMemoryKeys::kShared
             : SharedMemoryKeys::kPerIdentity;
}

std::string SharedMemoryKeyPrefix(absl::string_view identity) {
  const bool plain =
      !identity.empty() && identity.size() <= 64 &&
      std::all_of(identity.begin(), identity.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
      });
  if (plain) return absl::StrCat("/", identity, ".");
  return absl::StrCat("/.", absl::BytesToHexString(identity), ".");
}

SharedMemoryRegistry::SharedMemoryRegistry(const SharedMemoryOptions& options,
                                           SharedMemoryKeys keys, Backend* backend)
    : options_(options), keys_(keys), backend_(backend), rng_(std::random_device{}()) {}

std::string SharedMemoryRegistry::KeyPrefix(absl::string_view identity) const {
  return keys_ == SharedMemoryKeys::kPerIdentity ? SharedMemoryKeyPrefix(identity) : "";
}

std::uint64_t SharedMemoryRegistry::UsedLocked(absl::string_view identity,
                                               std::size_t* count) const {
  std::uint64_t bytes = 0;
  *count = 0;
  for (const auto& [handle, e] : entries_) {
    if (e.identity != identity) continue;
    bytes += e.info.byte_size;
    ++*count;
  }
  return bytes;
}

absl::StatusOr<SharedMemoryInfo> SharedMemoryRegistry::Register(absl::string_view identity,
                                                                const std::string& key,
                                                                std::uint64_t byte_size) {
  CUIMG_RETURN_IF_ERROR(ValidateSharedMemoryKey(key, "key"));
  if (const std::string prefix = KeyPrefix(identity); !absl::StartsWith(key, prefix)) {
    return MakeError(absl::StatusCode::kPermissionDenied, ErrorReason::kPermissionDenied, "key",
                     absl::StrCat("\"", key,
                                  "\" is not this caller's to register: its objects' names start "
                                  "with \"",
                                  prefix, "\" (ListSharedMemory's key_prefix)"));
  }
  if (byte_size == 0) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "byte_size", "must be > 0");
  }
  // Checked before mapping (cheap refusals), and again when inserting (concurrent registrations).
  auto check_caps = [&]() -> absl::Status {
    std::size_t count = 0;
    const std::uint64_t used = UsedLocked(identity, &count);
    if (count >= options_.max_regions_per_identity) {
      return MakeError(
          absl::StatusCode::kResourceExhausted, ErrorReason::kQuotaExceeded, "",
          absl::StrCat("the caller already has ", count, " regions registered, the limit is ",
                       options_.max_regions_per_identity, " (shared_memory_max_regions)"));
    }
    if (byte_size >
        options_.max_bytes_per_identity - std::min(used, options_.max_bytes_per_identity)) {
      // Alone over the cap, no unregistering helps.
      return MakeError(
          absl::StatusCode::kResourceExhausted,
          byte_size > options_.max_bytes_per_identity ? ErrorReason::kLimitExceeded
                                                      : ErrorReason::kQuotaExceeded,
          "byte_size",
          absl::StrCat(byte_size, " bytes + ", used, " registered exceeds the limit of ",
                       options_.max_bytes_per_identity, " (shared_memory_max_bytes_per_identity)"));
    }
    return absl::OkStatus();
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    CUIMG_RETURN_IF_ERROR(check_caps());
  }
  CUIMG_ASSIGN_OR_RETURN(std::unique_ptr<SharedMemoryRegion> region,
                         SharedMemoryRegion::Map(key, byte_size, backend_));
  std::lock_guard<std::mutex> lock(mu_);
  CUIMG_RETURN_IF_ERROR(check_caps());
  // Once at a time, by device and inode: while registered, an object is its registrant's alone,
  // whatever other name (a hard link) it is given.
  for (const auto& [handle, e] : entries_) {
    if (e.region->object() == region->object()) {
      return MakeError(absl::StatusCode::kAlreadyExists, ErrorReason::kAlreadyRegistered, "key",
                       absl::StrCat("the object \"", key,
                                    "\" is registered already (under this or another name); "
                                    "register an object once"));
    }
  }
  Entry entry;
  entry.identity = std::string(identity);
  // 128 random bits: handles cannot be guessed.
  entry.info.handle = absl::StrFormat("shm-%016x%016x", rng_(), rng_());
  entry.info.key = key;
  entry.info.byte_size = byte_size;
  entry.info.device_mapped = region->device_mapped();
  entry.region = std::move(region);
  SharedMemoryInfo info = entry.info;
  entries_.emplace(info.handle, std::move(entry));
  return info;
}

const SharedMemoryRegistry::Entry* SharedMemoryRegistry::FindLocked(
    absl::string_view identity, absl::string_view handle) const {
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.identity != identity) return nullptr;
  return &it->second;
}

absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> SharedMemoryRegistry::Get(
    absl::string_view identity, absl::string_view handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = FindLocked(identity, handle);
  if (e == nullptr) {
    return MakeError(absl::StatusCode::kNotFound, ErrorReason::kSharedMemoryNotFound, "",
                     absl::StrCat("no shared-memory region ", QuoteClientValue(handle),
                                  " registered by this caller"));
  }
  return e->region;
}

absl::Status SharedMemoryRegistry::Unregister(absl::string_view identity,
                                              absl::string_view handle) {
  std::shared_ptr<const SharedMemoryRegion> last;  // unmapped outside the lock, if last
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(identity, handle) == nullptr) {
    return MakeError(absl::StatusCode::kNotFound, ErrorReason::kSharedMemoryNotFound, "",
                     absl::StrCat("no shared-memory region ", QuoteClientValue(handle),
                                  " registered by this caller"));
  }
  auto it = entries_.find(handle);
  last = std::move(it->second.region);
  entries_.erase(it);
  return absl::OkStatus();
}

std::vector<SharedMemoryInfo> SharedMemoryRegistry::List(absl::string_view identity) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SharedMemoryInfo> out;
  for (const auto& [handle, e] : entries_) {
    if (e.identity == identity) out.push_back(e.info);
  }
  return out;
}

std::uint64_t SharedMemoryRegistry::UsedBytes(absl::string_view identity) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t count = 0;
  return UsedLocked(identity, &count);
}

SharedMemoryRegistry::Totals SharedMemoryRegistry::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  Totals t;
  for (const auto& [handle, e] : entries_) {
    ++t.regions;
    t.bytes += e.info.byte_size;
  }
  return t;
}

}  // namespace cuimg
