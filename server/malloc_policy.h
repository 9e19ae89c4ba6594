// The host allocator's policy for a long-running server (glibc malloc). Under many threads glibc
// gives each its own arena and keeps freed blocks of up to 32 MiB in them: the 200,000-call soak
// on the H200 (run 24) grew from 380 to 664 MiB without levelling off. Four arenas slowed the
// growth (333 -> 385 MiB); with malloc_trim every second as well the arenas' free pages go back
// and the run ended at 202 MiB, below its 331 MiB after warm-up. (A fixed mmap threshold also held
// RSS flat but halved throughput: every large buffer then cost page faults and an munmap.)
#ifndef CUIMG_SERVER_MALLOC_POLICY_H_
#define CUIMG_SERVER_MALLOC_POLICY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace cuimg {

// At most `arenas` malloc arenas (0: glibc's default, 8 per core). Call before starting threads.
// False where the allocator has no such setting.
bool LimitMallocArenas(int arenas);

// Calls malloc_trim every `interval` on its own thread until destroyed (nothing for a zero
// interval or an allocator without malloc_trim).
class MallocTrimmer {
 public:
  explicit MallocTrimmer(std::chrono::milliseconds interval);
  ~MallocTrimmer();
  MallocTrimmer(const MallocTrimmer&) = delete;
  MallocTrimmer& operator=(const MallocTrimmer&) = delete;

  // How many times malloc_trim has run so far.
  int trims() const { return trims_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<int> trims_{0};
  std::thread thread_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_MALLOC_POLICY_H_
