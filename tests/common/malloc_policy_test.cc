// The allocator policy: the huge-page tunable is added to GLIBC_TUNABLES once and never overrides
// an operator's own setting; the arena limit is accepted where glibc provides it, and the
// trimmer's thread stops at once when destroyed, however long its interval.
#include "cuimg/common/malloc_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace cuimg {
namespace {

TEST(MallocPolicy, HugePageTunableIsAddedToWhatIsSet) {
  EXPECT_EQ(HugePageTunables(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables("glibc.malloc.arena_max=4"),
            "glibc.malloc.arena_max=4:glibc.malloc.hugetlb=1");
  // A name that only starts like it is another tunable.
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlbx=1"),
            "glibc.malloc.hugetlbx=1:glibc.malloc.hugetlb=1");
}

TEST(MallocPolicy, HugePageTunableNeverOverridesTheOperators) {
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlb=0"), std::nullopt);
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlb=1"), std::nullopt);
  EXPECT_EQ(HugePageTunables("glibc.malloc.arena_max=4:glibc.malloc.hugetlb=2"), std::nullopt);
}

#if defined(__GLIBC__)
TEST(MallocPolicy, ArenaLimitIsAcceptedOnGlibc) { EXPECT_TRUE(LimitMallocArenas(4)); }
#endif

TEST(MallocPolicy, TrimmerStopsWithoutWaitingOutItsInterval) {
  const auto start = std::chrono::steady_clock::now();
  {
    MallocTrimmer trimmer(std::chrono::hours(1));
    std::vector<void*> blocks;
    for (int i = 0; i < 64; ++i) blocks.push_back(std::malloc(1 << 20));
    for (void* b : blocks) std::free(b);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(MallocPolicy, TrimmerRunsRepeatedlyAndStops) {
  int trims_at_stop = 0;
  {
    MallocTrimmer trimmer(std::chrono::milliseconds(1));
    std::vector<void*> blocks;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    // Allocate and free while it trims, until it has run a few times (on a loaded machine the
    // 1 ms waits stretch; 10 s bounds the wait).
    while (trimmer.trims() < 3 && std::chrono::steady_clock::now() < deadline) {
      for (int i = 0; i < 16; ++i) blocks.push_back(std::malloc(256 << 10));
      for (void* b : blocks) std::free(b);
      blocks.clear();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    trims_at_stop = trimmer.trims();
  }
#if defined(__GLIBC__)
  EXPECT_GE(trims_at_stop, 3);
#else
  EXPECT_EQ(trims_at_stop, 0);  // no malloc_trim: no thread
#endif
}

TEST(MallocPolicy, PromptTrimsOnlyForBigFreesWhileATrimmerRuns) {
  constexpr std::size_t kBig = MallocTrimmer::kPromptTrimBytes;
  EXPECT_FALSE(MallocTrimmer::TrimAfterFree(kBig));  // no trimmer
  {
    const MallocTrimmer off(std::chrono::milliseconds(0));
    EXPECT_FALSE(MallocTrimmer::TrimAfterFree(kBig));  // trimming turned off
  }
  const MallocTrimmer trimmer(std::chrono::hours(1));
  EXPECT_FALSE(MallocTrimmer::TrimAfterFree(kBig - 1));
  EXPECT_EQ(MallocTrimmer::TrimAfterFree(kBig), MallocTrimmer::TrimsThisMalloc());
}

#if defined(__linux__)
// Resident memory in kB (VmRSS).
long ResidentKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// What the server relies on after freeing a big message's received bytes: blocks below the mmap
// threshold, freed under a block still in use, stay resident until a trim gives them back.
TEST(MallocPolicy, APromptTrimGivesFreedHeapBlocksBack) {
  const MallocTrimmer trimmer(std::chrono::hours(1));
  constexpr std::size_t kBlock = 64 << 10;
  constexpr std::size_t kBlocks = (MallocTrimmer::kPromptTrimBytes * 2) / kBlock;
  std::vector<char*> blocks;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlock)));
    std::memset(blocks.back(), 1, kBlock);
  }
  void* above = std::malloc(64);  // keeps the heap's top where it is
  for (char* b : blocks) std::free(b);
  const long freed_kb = ResidentKb();
  const int trims_before = trimmer.trims();
  const bool trimmed = MallocTrimmer::TrimAfterFree(kBlocks * kBlock);
  // The trim runs on the trimmer's thread: wait for it (the periodic one is an hour away).
  for (int i = 0; trimmed && trimmer.trims() == trims_before && i < 5000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const long trimmed_kb = ResidentKb();
  std::free(above);
  if (!MallocTrimmer::TrimsThisMalloc()) {
    EXPECT_FALSE(trimmed);  // a sanitizer's malloc: no trim asked for, none to wait for
    return;
  }
  ASSERT_TRUE(trimmed);
  EXPECT_GE(freed_kb - trimmed_kb, static_cast<long>(MallocTrimmer::kPromptTrimBytes >> 10))
      << "resident " << freed_kb << " kB after the frees, " << trimmed_kb << " after the trim";
}
#endif

TEST(MallocPolicy, ZeroIntervalNeverTrims) {
  MallocTrimmer trimmer(std::chrono::milliseconds(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(trimmer.trims(), 0);
}

}  // namespace
}  // namespace cuimg
