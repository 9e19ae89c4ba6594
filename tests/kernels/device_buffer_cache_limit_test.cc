// The device memory cap of DeviceBufferCache is checked before any CUDA call, so it is testable
// without a GPU; the GPU path (leasing under the cap, then refusing) runs in test_faults.py's
// DeviceMemoryCap on the GPU machine.
#include <gtest/gtest.h>

#include "cuimg/common/device_buffer_cache.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(DeviceBufferCacheLimit, RefusesALeaseOverTheLimitBeforeAllocating) {
  DeviceBufferCache cache(/*device=*/0, /*budget_bytes=*/1 << 30, /*limit_bytes=*/1 << 20);
  EXPECT_THAT(cache.Acquire((1 << 20) + 1),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("exceeds the limit of 1048576 (device_memory_limit_bytes)")));
  const DeviceBufferCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);  // the refusal holds nothing
  EXPECT_EQ(stats.misses, 0u);
}

TEST(DeviceBufferCacheLimit, SizeClassesCountAgainstTheLimit) {
  // 600 KiB rounds up to the 1 MiB size class, over a 1000 KiB limit.
  DeviceBufferCache cache(0, 1 << 30, 1000 << 10);
  EXPECT_THAT(cache.Acquire(600 << 10), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(DeviceBufferCacheLimit, AnEmptyLeaseNeedsNoMemory) {
  DeviceBufferCache cache(0, 0, 1);
  absl::StatusOr<DeviceBufferCache::Lease> lease = cache.Acquire(0);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->size(), 0u);
}

}  // namespace
}  // namespace cuimg
