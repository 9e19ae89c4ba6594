// The allocator policy: the huge-page tunable is added to GLIBC_TUNABLES once and never overrides
// an operator's own setting; the arena limit is accepted where glibc provides it, and the
// trimmer's thread stops at once when destroyed, however long its interval.
#include "server/malloc_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
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

TEST(MallocPolicy, ZeroIntervalNeverTrims) {
  MallocTrimmer trimmer(std::chrono::milliseconds(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(trimmer.trims(), 0);
}

}  // namespace
}  // namespace cuimg
