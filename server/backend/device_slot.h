// DeviceSlot: one device's scheduling and health state, shared by the CUDA and CPU backends.
// Requests go to the least-loaded healthy slot; a slot that hits a sticky failure (or an injected
// one) leaves rotation until it recovers.
#ifndef CUIMG_SERVER_DEVICE_SLOT_H_
#define CUIMG_SERVER_DEVICE_SLOT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/server_options.h"

namespace cuimg {

class DeviceSlot {
 public:
  using Clock = std::function<absl::Time()>;
  DeviceSlot(
      int id, std::string label, const FaultInjection& fault,
      Clock clock = [] { return absl::Now(); });

  int id() const { return id_; }
  const std::string& label() const { return label_; }
  bool Healthy() const;
  std::string UnhealthyReason() const;
  int inflight() const { return inflight_.load(); }
  std::uint64_t requests() const { return requests_.load(); }
  // Takes the slot out of rotation; `duration` zero means until restart.
  void MarkFailed(const std::string& reason, absl::Duration duration = absl::ZeroDuration());

 private:
  friend class DeviceUse;
  // Counts the request; UNAVAILABLE when the injected fault fires on it.
  absl::Status Begin();
  void End();

  const int id_;
  const std::string label_;
  const FaultInjection fault_;
  const Clock clock_;
  std::atomic<int> inflight_{0};
  std::atomic<std::uint64_t> requests_{0};
  mutable std::mutex mu_;
  bool failed_ = false;
  absl::Time failed_until_ = absl::InfiniteFuture();
  std::string reason_;
};

// A request's use of one slot: picks the least-loaded healthy slot and counts the request in
// flight for the object's lifetime.
class DeviceUse {
 public:
  // UNAVAILABLE when no slot is healthy, or when an injected fault fires on the chosen one.
  static absl::StatusOr<DeviceUse> Acquire(const std::vector<DeviceSlot*>& slots);
  // This slot (where resident data lives); UNAVAILABLE when it is unhealthy.
  static absl::StatusOr<DeviceUse> AcquireOn(DeviceSlot* slot);
  DeviceUse(DeviceUse&& other) noexcept : slot_(std::exchange(other.slot_, nullptr)) {}
  DeviceUse(const DeviceUse&) = delete;
  DeviceUse& operator=(const DeviceUse&) = delete;
  DeviceUse& operator=(DeviceUse&&) = delete;
  ~DeviceUse() {
    if (slot_ != nullptr) slot_->End();
  }
  DeviceSlot& slot() const { return *slot_; }

 private:
  explicit DeviceUse(DeviceSlot* slot) : slot_(slot) {}
  DeviceSlot* slot_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_DEVICE_SLOT_H_
