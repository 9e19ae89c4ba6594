// PinnedMessagePool's classes and shared budget, over heap memory so that it runs without a GPU
// (the pinned buffers themselves serve every CUDA-backend e2e call on the GPU machine).
#include "server/backend/pinned_message_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/testing/counting_heap.h"

namespace cuimg {
namespace {

using ::cuimg::testing::CountingHeap;

constexpr std::size_t kKiB = 1024;

TEST(PinnedMessagePool, ClassesDoubleFromTheSmallestToTheFirstThatHoldsTheLargest) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 300 * kKiB, heap.Source());
  EXPECT_EQ(pool->class_bytes(),
            (std::vector<std::size_t>{64 * kKiB, 128 * kKiB, 256 * kKiB, 512 * kKiB}));
  auto one = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 64 * kKiB, heap.Source());
  EXPECT_EQ(one->class_bytes(), std::vector<std::size_t>{64 * kKiB});
}

TEST(PinnedMessagePool, ClassesFromSixteenMiBGrowByQuarterOctaves) {
  CountingHeap heap;
  constexpr std::size_t kMiB = 1024 * kKiB;
  auto pool = PinnedMessagePool::Create(512 * kMiB, 4 * kMiB, 150 * kMiB, heap.Source());
  EXPECT_EQ(pool->class_bytes(), (std::vector<std::size_t>{
                                     4 * kMiB, 8 * kMiB, 16 * kMiB, 20 * kMiB, 24 * kMiB, 28 * kMiB,
                                     32 * kMiB, 40 * kMiB, 48 * kMiB, 56 * kMiB, 64 * kMiB,
                                     80 * kMiB, 96 * kMiB, 112 * kMiB, 128 * kMiB, 160 * kMiB}));
  // A 512x512x300 i16 volume (150 MiB) holds 160 MiB of the budget, not 256.
  std::unique_ptr<HostBuffer> volume = pool->Allocate(512 * 512 * 300 * 2);
  ASSERT_NE(volume, nullptr);
  EXPECT_EQ(volume->size(), std::size_t{512 * 512 * 300 * 2});
  EXPECT_EQ(pool->stats().used, 160 * kMiB);
}

TEST(PinnedMessagePool, ABufferHasTheAskedSizeAndTakesItsClasssBytes) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(4 << 20, 64 * kKiB, 1 << 20, heap.Source());
  std::unique_ptr<HostBuffer> buffer = pool->Allocate(307200);  // a 640x480 u8 frame
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->size(), 307200u);
  std::memset(buffer->data(), 7, buffer->size());  // ASan: the whole size is writable
  EXPECT_EQ(pool->stats().used, 512 * kKiB);
  EXPECT_TRUE(pool->stats().pinned);
}

TEST(PinnedMessagePool, ReusesAReturnedBufferOfTheSameClass) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(4 << 20, 64 * kKiB, 1 << 20, heap.Source());
  void* first = nullptr;
  {
    std::unique_ptr<HostBuffer> a = pool->Allocate(200 * kKiB);
    ASSERT_NE(a, nullptr);
    first = a->data();
  }
  std::unique_ptr<HostBuffer> b = pool->Allocate(129 * kKiB);  // the same 256 KiB class
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->data(), first);
  std::unique_ptr<HostBuffer> c = pool->Allocate(100 * kKiB);  // another class: a new buffer
  ASSERT_NE(c, nullptr);
  const HostBufferPoolStats stats = pool->stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(heap.allocations, 2);
  EXPECT_EQ(stats.used, 256 * kKiB + 128 * kKiB);
  EXPECT_EQ(stats.cached, 0u);
}

TEST(PinnedMessagePool, NothingForZeroBytesOrPixelsOverTheLargest) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(64 << 20, 64 * kKiB, 1 << 20, heap.Source());
  EXPECT_EQ(pool->Allocate(0), nullptr);
  EXPECT_EQ(pool->Allocate((1 << 20) + 1), nullptr);
  EXPECT_NE(pool->Allocate(1 << 20), nullptr);
  EXPECT_EQ(heap.allocations, 1);
  EXPECT_EQ(pool->stats().refusals, 0u);  // not a budget matter
}

TEST(PinnedMessagePool, RefusesBeyondTheBudgetBeforeAllocating) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 1 << 20, heap.Source());
  std::unique_ptr<HostBuffer> a = pool->Allocate(600 * kKiB);  // 1 MiB class: the whole budget
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pool->Allocate(1), nullptr);
  EXPECT_EQ(pool->stats().refusals, 1u);
  EXPECT_EQ(heap.allocations, 1);
  auto disabled = PinnedMessagePool::Create(0, 64 * kKiB, 1 << 20, heap.Source());
  EXPECT_EQ(disabled->Allocate(1), nullptr);
  EXPECT_EQ(heap.allocations, 1);
}

TEST(PinnedMessagePool, FreesOtherClassesIdleBuffersToMakeRoom) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 1 << 20, heap.Source());
  {
    // The budget filled with small buffers, then all returned.
    std::vector<std::unique_ptr<HostBuffer>> small;
    for (int i = 0; i < 4; ++i) small.push_back(pool->Allocate(256 * kKiB));
    for (const auto& b : small) ASSERT_NE(b, nullptr);
  }
  EXPECT_EQ(pool->stats().cached, 1u << 20);
  EXPECT_EQ(heap.live, 4);
  // A larger class now gets room by freeing the idle small buffers.
  std::unique_ptr<HostBuffer> large = pool->Allocate(1 << 20);
  ASSERT_NE(large, nullptr);
  const HostBufferPoolStats stats = pool->stats();
  EXPECT_EQ(stats.used, 1u << 20);
  EXPECT_EQ(stats.cached, 0u);
  EXPECT_EQ(stats.refusals, 0u);
  EXPECT_EQ(heap.live, 1);
}

TEST(PinnedMessagePool, BuffersInUseAreNeverFreedForRoom) {
  CountingHeap heap;
  auto pool = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 1 << 20, heap.Source());
  std::unique_ptr<HostBuffer> held = pool->Allocate(512 * kKiB);
  { std::unique_ptr<HostBuffer> idle = pool->Allocate(256 * kKiB); }
  // 512 KiB held: freeing the idle 256 KiB would not make room, so it is kept.
  EXPECT_EQ(pool->Allocate(1 << 20), nullptr);
  const HostBufferPoolStats stats = pool->stats();
  EXPECT_EQ(stats.refusals, 1u);
  EXPECT_EQ(stats.used, 512 * kKiB);
  EXPECT_EQ(stats.cached, 256 * kKiB);
  EXPECT_EQ(heap.live, 2);
  std::memset(held->data(), 1, held->size());
}

TEST(PinnedMessagePool, AFailedAllocationHoldsNothing) {
  CountingHeap heap;
  heap.fail = true;
  auto pool = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 1 << 20, heap.Source());
  EXPECT_EQ(pool->Allocate(100), nullptr);
  EXPECT_EQ(pool->stats().used, 0u);
  heap.fail = false;
  EXPECT_NE(pool->Allocate(100), nullptr);
}

TEST(PinnedMessagePool, ABufferKeepsThePoolAliveAndEverythingIsFreedOnce) {
  CountingHeap heap;
  std::unique_ptr<HostBuffer> survivor;
  {
    auto pool = PinnedMessagePool::Create(1 << 20, 64 * kKiB, 1 << 20, heap.Source());
    survivor = pool->Allocate(64 * kKiB);
    { std::unique_ptr<HostBuffer> idle = pool->Allocate(128 * kKiB); }
  }
  // gRPC may free a sent response after the backend (and its pool handle) is gone.
  ASSERT_NE(survivor, nullptr);
  std::memset(survivor->data(), 3, survivor->size());
  EXPECT_EQ(heap.live, 2);
  survivor.reset();
  EXPECT_EQ(heap.live, 0);
}

}  // namespace
}  // namespace cuimg
