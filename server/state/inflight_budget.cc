#include "server/state/inflight_budget.h"

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
InflightBudget::InflightBudget(std::uint64_t capacity_bytes, std::uint64_t per_request_bytes)
    : capacity_(capacity_bytes), per_request_(per_request_bytes) {}

InflightBudget::Reservation& InflightBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

void InflightBudget::Reservation::Release() {
  if (budget_ == nullptr) return;
  std::lock_guard<std::mutex> lock(budget_->mu_);
  budget_->used_ -= bytes_;
  budget_ = nullptr;
}

absl::Status InflightBudget::Reservation::Resize(std::uint64_t bytes, absl::string_view field) {
  if (budget_ == nullptr) {
    return MakeError(absl::StatusCode::kFailedPrecondition, ErrorReason::kInternalError, "",
                     absl::StrCat(field, ": no reservation to resize"));
  }
  std::lock_guard<std::mutex> lock(budget_->mu_);
  if (bytes > bytes_) CUIMG_RETURN_IF_ERROR(budget_->CheckLocked(bytes_, bytes, field));
  budget_->used_ = budget_->used_ - bytes_ + bytes;
  bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status InflightBudget::CheckLocked(std::uint64_t held, std::uint64_t bytes,
                                         absl::string_view field) const {
  if (bytes > per_request_) {
    return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, field,
                     absl::StrCat(field.empty() ? "the request " : "", "needs about ", bytes,
                                  " bytes in flight, over the server limit "
                                  "max_inflight_bytes_per_device=",
                                  per_request_));
  }
  if (used_ - held + bytes > capacity_) {
    return MakeError(
        absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "",
        absl::StrCat("server busy: ", used_, " of ", capacity_, " in-flight bytes held, ",
                     field.empty() ? "the request" : field, " needs ", bytes - held,
                     held == 0 ? "" : " more", " (max_inflight_bytes_per_device); retry later"));
  }
  return absl::OkStatus();
}

absl::StatusOr<InflightBudget::Reservation> InflightBudget::Reserve(std::uint64_t bytes,
                                                                    absl::string_view field) {
  std::lock_guard<std::mutex> lock(mu_);
  CUIMG_RETURN_IF_ERROR(CheckLocked(0, bytes, field));
  used_ += bytes;
  return Reservation(this, bytes);
}

std::uint64_t InflightBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

}  // namespace cuimg
