#include "server/lock_order_checks.h"

#include "absl/synchronization/mutex.h"

namespace cuimg {

void SetLockOrderChecks(bool on) {
  absl::SetMutexDeadlockDetectionMode(on ? absl::OnDeadlockCycle::kAbort
                                         : absl::OnDeadlockCycle::kIgnore);
}

}  // namespace cuimg
