// Staged copies move every byte exactly, for sizes around the chunk size and the ring depth, with
// and without chunks to spare, and leave pinned (registered) memory to a direct copy.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/staged_copy.h"
#include "tests/testing/gpu_test_env.h"

namespace cuimg {
namespace {

constexpr std::size_t kChunk = 4096;

std::vector<std::uint8_t> Pattern(std::size_t bytes) {
  std::vector<std::uint8_t> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::uint8_t>((i * 131 + 7) >> 3);
  return v;
}

// Host -> device (staged) -> host (staged) and compare, through a pool of `budget` bytes.
void RoundTrip(std::size_t bytes, std::size_t budget, PinnedStagingPool::Stats* stats = nullptr) {
  // Prepare verification data
  PinnedStagingPool pool(budget, kChunk);
  const std::vector<std::uint8_t> in = Pattern(bytes);
  std::vector<std::uint8_t> out(bytes, 0);
  absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(bytes);
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  // Run test
  {
    std::vector<PinnedStagingPool::Lease> keep;
    ASSERT_TRUE(CopyToDeviceStaged(pool, d->data(), in.data(), bytes, stream->get(), &keep).ok());
    ASSERT_TRUE(CopyToHostStaged(pool, out.data(), d->data(), bytes, stream->get(), &keep).ok());
    ASSERT_TRUE(stream->Synchronize().ok());
    EXPECT_LE(keep.size(), static_cast<std::size_t>(kStagingDepth));  // D2H gave its chunks back
  }
  // Verify result
  EXPECT_EQ(in, out) << bytes << " bytes, budget " << budget;
  if (stats != nullptr) *stats = pool.stats();
}

TEST(StagedCopy, MovesEveryByteAroundChunkAndRingSizes) {
  CUIMG_SKIP_IF_NO_GPU();
  for (std::size_t bytes : {std::size_t{1}, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk,
                            3 * kChunk + 17, 10 * kChunk + 5, std::size_t{1} << 20}) {
    RoundTrip(bytes, 64 * kChunk);
  }
}

TEST(StagedCopy, WorksWithFewerChunksThanTheRingAndWithNone) {
  CUIMG_SKIP_IF_NO_GPU();
  PinnedStagingPool::Stats stats;
  RoundTrip(10 * kChunk + 5, kChunk, &stats);  // one chunk cycles alone
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_GE(stats.refusals, 1u);
  RoundTrip(10 * kChunk + 5, 0, &stats);  // no staging at all: pageable copies
  EXPECT_EQ(stats.misses, 0u);
}

TEST(StagedCopy, AWarmPoolAllocatesNoMore) {
  CUIMG_SKIP_IF_NO_GPU();
  PinnedStagingPool pool(64 * kChunk, kChunk);
  const std::vector<std::uint8_t> in = Pattern(20 * kChunk);
  absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(in.size());
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(d.ok() && stream.ok());
  for (int i = 0; i < 5; ++i) {
    std::vector<PinnedStagingPool::Lease> keep;
    ASSERT_TRUE(
        CopyToDeviceStaged(pool, d->data(), in.data(), in.size(), stream->get(), &keep).ok());
    ASSERT_TRUE(stream->Synchronize().ok());
  }
  EXPECT_EQ(pool.stats().misses, static_cast<std::uint64_t>(kStagingDepth));
  EXPECT_EQ(pool.stats().hits, 4u * kStagingDepth);
}

TEST(StagedCopy, CopiesPageLockedMemoryDirectly) {
  CUIMG_SKIP_IF_NO_GPU();
  PinnedStagingPool pool(64 * kChunk, kChunk);
  std::vector<std::uint8_t> in = Pattern(5 * kChunk);
  ASSERT_EQ(cudaHostRegister(in.data(), in.size(), cudaHostRegisterDefault), cudaSuccess);
  EXPECT_TRUE(IsPageLocked(in.data() + 100));
  absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(in.size());
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(d.ok() && stream.ok());
  std::vector<std::uint8_t> out(in.size());
  std::vector<PinnedStagingPool::Lease> keep;
  ASSERT_TRUE(CopyToDeviceStaged(pool, d->data(), in.data(), in.size(), stream->get(), &keep).ok());
  ASSERT_TRUE(CopyToHostStaged(pool, out.data(), d->data(), out.size(), stream->get(), &keep).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(in, out);
  EXPECT_EQ(pool.stats().misses, static_cast<std::uint64_t>(kStagingDepth));  // only the D2H
  EXPECT_TRUE(keep.empty());  // the direct H2D holds none; the D2H returned its own
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  EXPECT_FALSE(IsPageLocked(out.data()));
  EXPECT_EQ(cudaHostUnregister(in.data()), cudaSuccess);
}

}  // namespace
}  // namespace cuimg
