#include "server/state/upload_quota.h"

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

UploadQuota::Slot& UploadQuota::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    quota_ = std::exchange(other.quota_, nullptr);
    identity_ = std::move(other.identity_);
    bytes_ = other.bytes_;
  }
  return *this;
}

absl::Status UploadQuota::Slot::Declare(std::uint64_t bytes, absl::string_view field) {
  if (quota_ == nullptr || bytes_ != 0) {
    return MakeError(absl::StatusCode::kFailedPrecondition, ErrorReason::kInternalError, "",
                     absl::StrCat(field, ": no open upload slot to claim"));
  }
  const std::uint64_t cap = quota_->options_.max_bytes_per_identity;
  if (bytes > cap) {
    return MakeError(
        absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, field,
        absl::StrCat(
            bytes, " bytes exceeds the ", cap,
            " bytes one client's open uploads may declare (max_upload_bytes_per_identity)"));
  }
  std::lock_guard<std::mutex> lock(quota_->mu_);
  Usage& usage = quota_->usage_[identity_];
  if (usage.bytes + bytes > cap) {
    // The caller's other uploads end by themselves: retrying later can succeed.
    return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "",
                     absl::StrCat("this client's open uploads already declare ", usage.bytes,
                                  " of ", cap, " bytes (max_upload_bytes_per_identity), ", field,
                                  " needs ", bytes, "; retry when they finish"));
  }
  usage.bytes += bytes;
  bytes_ = bytes;
  return absl::OkStatus();
}

void UploadQuota::Slot::Release() {
  if (quota_ == nullptr) return;
  std::lock_guard<std::mutex> lock(quota_->mu_);
  auto it = quota_->usage_.find(identity_);
  it->second.bytes -= bytes_;
  if (--it->second.open == 0) quota_->usage_.erase(it);
  quota_ = nullptr;
  bytes_ = 0;
}

absl::StatusOr<UploadQuota::Slot> UploadQuota::Open(absl::string_view identity) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = usage_.find(identity);
  const int open = it == usage_.end() ? 0 : it->second.open;
  if (open >= options_.max_open_per_identity) {
    return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "",
                     absl::StrCat("this client already has ", open,
                                  " uploads open (max_uploads_per_identity); retry when one "
                                  "finishes"));
  }
  ++usage_[std::string(identity)].open;
  return Slot(this, std::string(identity));
}

int UploadQuota::open(absl::string_view identity) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = usage_.find(identity);
  return it == usage_.end() ? 0 : it->second.open;
}

std::uint64_t UploadQuota::declared_bytes(absl::string_view identity) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = usage_.find(identity);
  return it == usage_.end() ? 0 : it->second.bytes;
}

}  // namespace cuimg
