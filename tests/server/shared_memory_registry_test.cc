// SharedMemoryRegistry and SharedMemoryRegion over real POSIX shared-memory objects, on the CPU
// backend (no page-locking): names, sizes, caps, identities, bounds, a shrunk object, and
// unregistering a region a request still holds.
#include "server/shared_memory_registry.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "tests/testing/shm_object.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::ShmObject;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

class SharedMemoryRegistryTest : public ::testing::Test {
 protected:
  SharedMemoryRegistryTest() : backend_(CreateCpuBackend(ServerOptions{})) {
    options_.enabled = true;
    options_.max_bytes_per_identity = 1 << 20;
    options_.max_regions_per_identity = 3;
  }
  SharedMemoryRegistry Registry() { return SharedMemoryRegistry(options_, backend_.get()); }

  std::unique_ptr<Backend> backend_;
  SharedMemoryOptions options_;
};

// How many times the object named `key` is mapped into this process.
int Mappings(const std::string& key) {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    count += line.find("/dev/shm" + key) != std::string::npos;
  }
  return count;
}

TEST_F(SharedMemoryRegistryTest, RefusesBadNamesNamingTheKey) {
  SharedMemoryRegistry registry = Registry();
  for (const char* key : {"", "/", "noslash", "/a/b", "/../etc", "/a b", "/.", "/..",
                          "/\xc3\xa9"}) {
    EXPECT_THAT(registry.Register("alice", key, 64),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key:")))
        << key;
  }
  EXPECT_THAT(registry.Register("alice", "/" + std::string(255, 'a'), 64),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key:")));
}

TEST_F(SharedMemoryRegistryTest, RefusesMissingObjectsAndSizesTheyDoNotHold) {
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  EXPECT_THAT(registry.Register("alice", "/cuimg-test-no-such-object", 64),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("shm_open")));
  EXPECT_THAT(registry.Register("alice", shm.key(), 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte_size")));
  EXPECT_THAT(registry.Register("alice", shm.key(), 4097),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds only 4096")));
  EXPECT_THAT(registry.Register("alice", shm.key(), 4096), IsOk());
}

TEST_F(SharedMemoryRegistryTest, RegionsAreInvisibleToOtherIdentities) {
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  absl::StatusOr<SharedMemoryInfo> info = registry.Register("alice", shm.key(), 4096);
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->byte_size, 4096u);
  EXPECT_FALSE(info->device_mapped);  // the CPU backend pins nothing
  EXPECT_THAT(registry.Get("alice", info->handle), IsOk());
  EXPECT_THAT(registry.Get("bob", info->handle), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(registry.Unregister("bob", info->handle), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(registry.List("bob").empty());
  EXPECT_EQ(registry.UsedBytes("bob"), 0u);
  ASSERT_EQ(registry.List("alice").size(), 1u);
  EXPECT_EQ(registry.List("alice")[0].key, shm.key());
  EXPECT_THAT(registry.Unregister("alice", info->handle), IsOk());
  EXPECT_THAT(registry.Get("alice", info->handle), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SharedMemoryRegistryTest, CapsCountAndBytesPerIdentity) {
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(1 << 20);
  ASSERT_TRUE(shm.ok());
  ASSERT_THAT(registry.Register("alice", shm.key(), 600 << 10), IsOk());
  EXPECT_THAT(registry.Register("alice", shm.key(), 500 << 10),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("shared_memory_max_bytes_per_identity")));
  EXPECT_THAT(registry.Register("bob", shm.key(), 1 << 20), IsOk());  // bob's own budget
  ASSERT_THAT(registry.Register("alice", shm.key(), 1), IsOk());
  ASSERT_THAT(registry.Register("alice", shm.key(), 1), IsOk());
  EXPECT_THAT(registry.Register("alice", shm.key(), 1),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("shared_memory_max_regions")));
  EXPECT_EQ(registry.totals().regions, 4u);
  EXPECT_EQ(registry.totals().bytes, (600u << 10) + (1u << 20) + 2);
}

TEST_F(SharedMemoryRegistryTest, SpansAreBoundsCheckedWithoutOverflow) {
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  absl::StatusOr<SharedMemoryInfo> info = registry.Register("alice", shm.key(), 4096);
  ASSERT_THAT(info, IsOk());
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> region =
      registry.Get("alice", info->handle);
  ASSERT_THAT(region, IsOk());
  EXPECT_THAT((*region)->Span(0, 4096, "f"), IsOk());
  EXPECT_THAT((*region)->Span(4000, 96, "f"), IsOk());
  EXPECT_THAT((*region)->Span(4096, 0, "f"), IsOk());
  EXPECT_THAT((*region)->Span(4000, 97, "input.shared_memory.offset"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input.shared_memory.offset: bytes [4000, 4000 + 97)")));
  EXPECT_THAT((*region)->Span(std::numeric_limits<std::uint64_t>::max(), 2, "f"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT((*region)->Span(1, std::numeric_limits<std::uint64_t>::max(), "f"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SharedMemoryRegistryTest, AShrunkObjectIsRefusedInsteadOfFaulting) {
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(8192);
  ASSERT_TRUE(shm.ok());
  absl::StatusOr<SharedMemoryInfo> info = registry.Register("alice", shm.key(), 8192);
  ASSERT_THAT(info, IsOk());
  auto region = registry.Get("alice", info->handle);
  ASSERT_THAT(region, IsOk());
  ASSERT_TRUE(shm.Truncate(4096));
  EXPECT_THAT((*region)->Span(0, 4096, "f"), IsOk());
  EXPECT_THAT((*region)->Span(4096, 1, "f"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("shrunk")));
}

TEST_F(SharedMemoryRegistryTest, UnregisteringARegionInUseUnmapsItWhenTheLastUserIsDone) {
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  std::memset(shm.data(), 7, 4096);
  absl::StatusOr<SharedMemoryInfo> info = registry.Register("alice", shm.key(), 4096);
  ASSERT_THAT(info, IsOk());
  auto held = registry.Get("alice", info->handle);  // a request in flight
  ASSERT_THAT(held, IsOk());
  EXPECT_EQ(Mappings(shm.key()), 2);  // the test's and the server's

  EXPECT_THAT(registry.Unregister("alice", info->handle), IsOk());
  EXPECT_THAT(registry.Get("alice", info->handle), StatusIs(absl::StatusCode::kNotFound));
  absl::StatusOr<std::uint8_t*> bytes = (*held)->Span(0, 4096, "f");
  ASSERT_THAT(bytes, IsOk());
  (*bytes)[10] = 42;  // still mapped for the holder
  EXPECT_EQ(shm.data()[10], 42);
  EXPECT_EQ((*bytes)[11], 7);

  held->reset();
  EXPECT_EQ(Mappings(shm.key()), 1);  // only the test's own
}

}  // namespace
}  // namespace cuimg
