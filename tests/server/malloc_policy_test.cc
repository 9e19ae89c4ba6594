// The allocator policy: the arena limit is accepted where glibc provides it, and the trimmer's
// thread stops at once when destroyed, however long its interval.
#include "server/malloc_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <vector>

namespace cuimg {
namespace {

TEST(MallocPolicy, ArenaLimitIsAcceptedOnGlibc) {
#if defined(__GLIBC__)
  EXPECT_TRUE(LimitMallocArenas(4));
#endif
  EXPECT_TRUE(LimitMallocArenas(0));  // the allocator's default: nothing to set
}

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
  MallocTrimmer trimmer(std::chrono::milliseconds(1));
  std::vector<void*> blocks;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 16; ++i) blocks.push_back(std::malloc(256 << 10));
    for (void* b : blocks) std::free(b);
    blocks.clear();
  }
}

}  // namespace
}  // namespace cuimg
