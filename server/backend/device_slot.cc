#include "server/backend/device_slot.h"

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

DeviceSlot::DeviceSlot(int id, std::string label, const FaultInjection& fault, Clock clock)
    : id_(id), label_(std::move(label)), fault_(fault), clock_(std::move(clock)) {}

bool DeviceSlot::Healthy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !failed_ || clock_() >= failed_until_;
}

std::string DeviceSlot::UnhealthyReason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (!failed_ || clock_() >= failed_until_) ? "" : reason_;
}

void DeviceSlot::MarkFailed(const std::string& reason, absl::Duration duration) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = true;
  reason_ = reason;
  failed_until_ = duration == absl::ZeroDuration() ? absl::InfiniteFuture() : clock_() + duration;
}

absl::Status DeviceSlot::Begin() {
  inflight_.fetch_add(1);
  const std::uint64_t n = requests_.fetch_add(1) + 1;
  if (fault_.device == id_ && n == static_cast<std::uint64_t>(fault_.after_requests) + 1) {
    MarkFailed("injected fault", absl::Milliseconds(fault_.duration_ms));
    return MakeError(absl::StatusCode::kUnavailable, ErrorReason::kUnavailable, "",
                     absl::StrCat("device ", label_, " failed (injected fault)"));
  }
  return absl::OkStatus();
}

void DeviceSlot::End() { inflight_.fetch_sub(1); }

absl::StatusOr<DeviceUse> DeviceUse::Acquire(const std::vector<DeviceSlot*>& slots) {
  // Least loaded wins; ties rotate so that idle devices share sequential traffic.
  static std::atomic<unsigned> next{0};
  const unsigned start = next.fetch_add(1);
  DeviceSlot* best = nullptr;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    DeviceSlot* s = slots[(start + i) % slots.size()];
    if (!s->Healthy()) continue;
    if (best == nullptr || s->inflight() < best->inflight()) best = s;
  }
  if (best == nullptr) {
    return MakeError(absl::StatusCode::kUnavailable, ErrorReason::kUnavailable, "",
                     "no healthy device");
  }
  DeviceUse use(best);
  if (absl::Status s = best->Begin(); !s.ok()) return s;  // `use` still ends the request
  return use;
}

absl::StatusOr<DeviceUse> DeviceUse::AcquireOn(DeviceSlot* slot) {
  if (!slot->Healthy()) {
    return MakeError(absl::StatusCode::kUnavailable, ErrorReason::kUnavailable, "",
                     absl::StrCat("device ", slot->label(),
                                  " holding the data is unhealthy: ", slot->UnhealthyReason()));
  }
  DeviceUse use(slot);
  if (absl::Status s = slot->Begin(); !s.ok()) return s;
  return use;
}

}  // namespace cuimg
