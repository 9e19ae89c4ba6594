// The host allocator's policy for a long-running server (glibc malloc). Under many threads glibc
// gives each its own arena and keeps freed blocks of up to 32 MiB in them: the 200,000-call soak
// on the H200 (run 24) grew from 380 to 664 MiB without levelling off. Four arenas slowed the
// growth (333 -> 385 MiB); with malloc_trim every second as well the arenas' free pages go back
// and the run ended at 202 MiB, below its 331 MiB after warm-up. (A fixed mmap threshold also held
// RSS flat but halved throughput: every large buffer then cost page faults and an munmap.)
#ifndef CUIMG_COMMON_MALLOC_POLICY_H_
#define CUIMG_COMMON_MALLOC_POLICY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cuimg {

// Big messages cost page faults: gRPC reads each into freshly allocated buffers, one 4 KiB fault
// per page. With glibc's malloc asking for transparent huge pages (GLIBC_TUNABLES
// glibc.malloc.hugetlb=1) a fault maps 2 MiB. On the H100 machine (run 192) the CLI's unary round
// trip of a 157 MB volume fell from 270-280 to 228-235 ms with it in the CLI; in the server as
// well it gained nothing clear (210-234 ms), and on a 2-core machine the server then stalled
// ~0.3 s in 4 of 11 calls. So the CLI always asks, the server only when told
// (--malloc_huge_pages). Tunables are read only when a program starts, so the program starts
// itself again with the setting.
//
// Re-executes this program (/proc/self/exe, the same arguments and environment) with
// glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, unless HugePageTunables(GLIBC_TUNABLES) says
// there is nothing to add, the kernel's transparent huge pages are off ("never"), the allocator is
// not glibc's (>= 2.35; sanitizer builds bring their own) or the exec fails. Returns only in those
// cases, with the environment as it was. Call first thing in main, before any thread starts.
// GLIBC_TUNABLES=glibc.malloc.hugetlb=0 opts out.
void ExecWithHugePageMalloc(char** argv);

// GLIBC_TUNABLES with glibc.malloc.hugetlb=1 added to `current` (null or empty: unset); nullopt
// when `current` already sets glibc.malloc.hugetlb, whatever its value.
std::optional<std::string> HugePageTunables(const char* current);

// Whether this process's malloc was told to use huge pages (GLIBC_TUNABLES holds
// glibc.malloc.hugetlb=1), for the start-up log.
bool MallocHugePagesRequested();

// At most `arenas` malloc arenas (0: glibc's default, 8 per core). Call before starting threads.
// False where the allocator has no such setting.
bool LimitMallocArenas(int arenas);

// Calls malloc_trim every `interval` on its own thread until destroyed (nothing for a zero
// interval or an allocator without malloc_trim).
class MallocTrimmer {
 public:
  // TrimAfterFree trims from this many freed bytes on.
  static constexpr std::size_t kPromptTrimBytes = std::size_t{32} << 20;

  // Wakes the running trimmer to trim now, on its own thread, when `freed_bytes` (just freed by
  // the caller) are at least kPromptTrimBytes, a trimmer with a non-zero interval is running in
  // this process (an operator who turned trimming off gets none here either) and malloc is
  // glibc's (not a sanitizer's). Returns whether it asked for a trim; requests made while a trim
  // runs give one more after it. For a big message's received bytes: gRPC reads them into blocks
  // that glibc serves from its arenas, which keep them resident once freed until the next trim.
  // For a 157 MB volume that was a third copy of the pixels beside the request's and the
  // result's buffers: the server's peak for one unary call on the CPU backend was 2.6-2.9x the
  // pixel bytes when no periodic pass came between (2.0x with this trim). Not on the caller's
  // thread: trimming inline cost a 157 MB volume's unary call 13 ms of its copy on the H100
  // machine (run 206: returning 157 MB of pages interrupts every core the server runs on).
  static bool TrimAfterFree(std::size_t freed_bytes);

  // Whether malloc_trim reaches this process's malloc: glibc's, not a sanitizer's (which
  // TrimAfterFree then never asks to trim).
  static bool TrimsThisMalloc();

  explicit MallocTrimmer(std::chrono::milliseconds interval);
  ~MallocTrimmer();
  MallocTrimmer(const MallocTrimmer&) = delete;
  MallocTrimmer& operator=(const MallocTrimmer&) = delete;

  // How many times malloc_trim has run so far.
  int trims() const { return trims_.load(std::memory_order_relaxed); }

 private:
  void RequestTrim();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool prompt_ = false;  // TrimAfterFree asked for a trim now
  std::atomic<int> trims_{0};
  std::thread thread_;
  // The trimmer whose thread runs, for TrimAfterFree (the last one started).
  static std::mutex active_mu_;
  static MallocTrimmer* active_;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_MALLOC_POLICY_H_
