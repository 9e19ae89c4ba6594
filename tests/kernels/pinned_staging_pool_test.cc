// PinnedStagingPool's accounting, over heap memory so that it runs without a GPU (the pinned
// allocations themselves are exercised by staged_copy_gpu_test).
#include "cuimg/common/pinned_staging_pool.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/testing/counting_heap.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::CountingHeap;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PinnedStagingPool, ReusesAReturnedChunkWithoutAllocating) {
  CountingHeap heap;
  PinnedStagingPool pool(/*budget_bytes=*/4096, /*chunk_bytes=*/1024, heap.Source());
  void* first = nullptr;
  {
    absl::StatusOr<PinnedStagingPool::Lease> lease = pool.Acquire();
    ASSERT_TRUE(lease.ok());
    first = lease->data();
    EXPECT_EQ(lease->size(), 1024u);
    EXPECT_EQ(pool.stats().in_use_bytes, 1024u);
  }
  absl::StatusOr<PinnedStagingPool::Lease> again = pool.Acquire();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), first);
  const PinnedStagingPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.in_use_bytes, 1024u);
  EXPECT_EQ(stats.idle_bytes, 0u);
  EXPECT_EQ(heap.allocations, 1);
}

TEST(PinnedStagingPool, RefusesBeyondTheBudgetBeforeAllocating) {
  CountingHeap heap;
  PinnedStagingPool pool(/*budget_bytes=*/2500, /*chunk_bytes=*/1024, heap.Source());
  absl::StatusOr<PinnedStagingPool::Lease> a = pool.Acquire();
  absl::StatusOr<PinnedStagingPool::Lease> b = pool.Acquire();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->data(), b->data());
  EXPECT_THAT(pool.Acquire(), StatusIs(absl::StatusCode::kResourceExhausted,
                                       HasSubstr("budget is 2500 (pinned_staging_bytes)")));
  const PinnedStagingPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.refusals, 1u);
  EXPECT_EQ(stats.in_use_bytes, 2048u);
  EXPECT_EQ(heap.allocations, 2);
}

TEST(PinnedStagingPool, AZeroBudgetDisablesStaging) {
  CountingHeap heap;
  PinnedStagingPool pool(0, 1024, heap.Source());
  EXPECT_THAT(pool.Acquire(), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(heap.allocations, 0);
}

TEST(PinnedStagingPool, AFailedAllocationHoldsNothing) {
  CountingHeap heap;
  heap.fail = true;
  PinnedStagingPool pool(4096, 1024, heap.Source());
  EXPECT_THAT(pool.Acquire(), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("heap")));
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  heap.fail = false;
  EXPECT_TRUE(pool.Acquire().ok());  // the failed miss did not use up the budget
}

TEST(PinnedStagingPool, MovedLeasesReturnOnceAndThePoolFreesIdleChunks) {
  CountingHeap heap;
  {
    PinnedStagingPool pool(4096, 1024, heap.Source());
    absl::StatusOr<PinnedStagingPool::Lease> a = pool.Acquire();
    absl::StatusOr<PinnedStagingPool::Lease> b = pool.Acquire();
    ASSERT_TRUE(a.ok() && b.ok());
    PinnedStagingPool::Lease moved = *std::move(a);
    moved = *std::move(b);  // the chunk `moved` held goes back
    EXPECT_EQ(pool.stats().in_use_bytes, 1024u);
    EXPECT_EQ(pool.stats().idle_bytes, 1024u);
    { PinnedStagingPool::Lease gone = std::move(moved); }
    EXPECT_EQ(pool.stats().in_use_bytes, 0u);
    EXPECT_EQ(pool.stats().idle_bytes, 2048u);
    EXPECT_EQ(heap.live, 2);  // cached, not freed
  }
  EXPECT_EQ(heap.live, 0);
}

}  // namespace
}  // namespace cuimg
