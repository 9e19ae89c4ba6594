// UploadQuota: what one identity's open Upload streams may claim at once: how many streams, and
// the declared size of their objects together. Declared bytes cost no memory (an upload's buffer
// grows as its bytes arrive: upload_buffer.h); bounding them keeps one identity's uploads from
// ever claiming the whole in-flight budget, whatever they send later.
#ifndef CUIMG_SERVER_UPLOAD_QUOTA_H_
#define CUIMG_SERVER_UPLOAD_QUOTA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cuimg {

struct UploadQuotaOptions {
  int max_open_per_identity = 8;
  std::uint64_t max_bytes_per_identity = std::uint64_t{2} << 30;
};

class UploadQuota {
 public:
  explicit UploadQuota(UploadQuotaOptions options) : options_(options) {}
  UploadQuota(const UploadQuota&) = delete;
  UploadQuota& operator=(const UploadQuota&) = delete;

  // One open upload of one identity; gives back its stream and declared bytes when destroyed
  // (or moved from). Must not outlive the quota.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept
        : quota_(std::exchange(other.quota_, nullptr)),
          identity_(std::move(other.identity_)),
          bytes_(other.bytes_) {}
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }
    // Claims `bytes` (the object's size; once per slot). RESOURCE_EXHAUSTED naming
    // max_upload_bytes_per_identity when the identity's open uploads would declare more than it:
    // alone over it, never (LIMIT_EXCEEDED naming `field`); else once others finish (OVERLOADED).
    // FAILED_PRECONDITION on an empty slot.
    absl::Status Declare(std::uint64_t bytes, absl::string_view field);
    // Gives everything back now (idempotent).
    void Release();

   private:
    friend class UploadQuota;
    Slot(UploadQuota* quota, std::string identity)
        : quota_(quota), identity_(std::move(identity)) {}
    UploadQuota* quota_ = nullptr;
    std::string identity_;
    std::uint64_t bytes_ = 0;
  };

  // A slot for a new upload of `identity`; RESOURCE_EXHAUSTED naming max_uploads_per_identity
  // when it has that many open already.
  absl::StatusOr<Slot> Open(absl::string_view identity);
  std::uint64_t max_bytes_per_identity() const { return options_.max_bytes_per_identity; }
  // Open uploads and declared bytes of `identity`, for tests and metrics.
  int open(absl::string_view identity) const;
  std::uint64_t declared_bytes(absl::string_view identity) const;

 private:
  struct Usage {
    int open = 0;
    std::uint64_t bytes = 0;
  };
  const UploadQuotaOptions options_;
  mutable std::mutex mu_;
  // Identities with an open upload only.
  std::map<std::string, Usage, std::less<>> usage_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_UPLOAD_QUOTA_H_
