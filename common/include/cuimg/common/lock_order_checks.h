// Abseil's lock-order checks (absl::Mutex deadlock detection), switched per process.
//
// Debian builds Abseil without NDEBUG, and that turns the checks on: every absl::Mutex
// acquisition is recorded in one process-wide lock graph under one global spinlock. gRPC 1.51's
// mutexes are absl::Mutex, so threads holding unrelated locks queue on that spinlock. On the
// 2-core build machine a lock and unlock of an uncontended mutex took 34 ns with the checks and
// 10 without; two threads, each on its own mutex, 177 against 11 ns. On the H200 host, with
// them off, cuimg served ~10% more calls at 64 in flight (BENCHMARKS.md, runs 172-173). The
// servers, the client and the load driver turn them off at start; the tests keep Debian's
// default, where the checks find lock-order bugs.
#ifndef CUIMG_COMMON_LOCK_ORDER_CHECKS_H_
#define CUIMG_COMMON_LOCK_ORDER_CHECKS_H_

#include "absl/synchronization/mutex.h"

namespace cuimg {

// On: a lock acquired in an order inconsistent with an earlier one aborts the process (where
// Abseil was built with the checks, as Debian's is). Off: no lock-order bookkeeping. Call at the
// start of main, before other threads start. Inline, so that the client needs no server library.
inline void SetLockOrderChecks(bool on) {
  absl::SetMutexDeadlockDetectionMode(on ? absl::OnDeadlockCycle::kAbort
                                         : absl::OnDeadlockCycle::kIgnore);
}

}  // namespace cuimg

#endif  // CUIMG_COMMON_LOCK_ORDER_CHECKS_H_
