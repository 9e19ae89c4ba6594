#include "server/inflight_budget.h"

#include "absl/strings/str_cat.h"

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

absl::StatusOr<InflightBudget::Reservation> InflightBudget::Reserve(std::uint64_t bytes,
                                                                    absl::string_view field) {
  if (bytes > per_request_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ": needs about ", bytes, " bytes in flight, over the server limit "
                     "max_inflight_bytes_per_device=", per_request_));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (used_ + bytes > capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server busy: ", used_, " of ", capacity_, " in-flight bytes held, ", field, " needs ",
                     bytes, " (max_inflight_bytes_per_device); retry later"));
  }
  used_ += bytes;
  return Reservation(this, bytes);
}

std::uint64_t InflightBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

}  // namespace cuimg
