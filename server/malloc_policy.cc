#include "server/malloc_policy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cuimg {

bool LimitMallocArenas(int arenas) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
  return arenas <= 0 || mallopt(M_ARENA_MAX, arenas) == 1;
#else
  return arenas <= 0;
#endif
}

MallocTrimmer::MallocTrimmer(std::chrono::milliseconds interval) {
#if defined(__GLIBC__)
  if (interval.count() <= 0) return;
  thread_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, interval, [this] { return stopping_; })) {
      lock.unlock();
      malloc_trim(0);
      trims_.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
    }
  });
#else
  (void)interval;
#endif
}

MallocTrimmer::~MallocTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace cuimg
