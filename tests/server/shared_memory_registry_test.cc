// SharedMemoryRegistry and SharedMemoryRegion over real POSIX shared-memory objects, on the CPU
// backend (no page-locking): names, sizes, caps, identities and their key prefixes, one
// registration per object, bounds, objects shrunk under the server (before and during access),
// and unregistering a region a request still holds.
#include "server/state/shared_memory_registry.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "absl/strings/match.h"
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
  SharedMemoryRegistry Registry(SharedMemoryKeys keys = SharedMemoryKeys::kShared) {
    return SharedMemoryRegistry(options_, keys, backend_.get());
  }

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
  for (const char* key :
       {"", "/", "noslash", "/a/b", "/../etc", "/a b", "/.", "/..", "/\xc3\xa9"}) {
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
  ShmObject a(1 << 20), b(1 << 20), c(1 << 20), d(4096), e(4096);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok() && e.ok());
  ASSERT_THAT(registry.Register("alice", a.key(), 600 << 10), IsOk());
  EXPECT_THAT(registry.Register("alice", b.key(), 500 << 10),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("shared_memory_max_bytes_per_identity")));
  EXPECT_THAT(registry.Register("bob", b.key(), 1 << 20), IsOk());  // bob's own budget
  ASSERT_THAT(registry.Register("alice", c.key(), 1), IsOk());
  ASSERT_THAT(registry.Register("alice", d.key(), 1), IsOk());
  EXPECT_THAT(
      registry.Register("alice", e.key(), 1),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("shared_memory_max_regions")));
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

TEST_F(SharedMemoryRegistryTest, AnObjectShrunkBeforeUseIsRefusedAndStaysRefused) {
  // Arrange
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(8192);
  ASSERT_TRUE(shm.ok());
  absl::StatusOr<SharedMemoryInfo> info = registry.Register("alice", shm.key(), 8192);
  ASSERT_THAT(info, IsOk());
  auto region = registry.Get("alice", info->handle);
  ASSERT_THAT(region, IsOk());

  // Act: shrink, then restore the size.
  ASSERT_TRUE(shm.Truncate(4096));
  const absl::Status shrunk = (*region)->CheckIntact("input.shared_memory.region");
  ASSERT_TRUE(shm.Truncate(8192));

  // Assert: refused on every span, even the part the object kept, and after it grew back.
  EXPECT_THAT(shrunk, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("input.shared_memory.region: the shared-memory object \"" +
                                         shm.key() + "\" was shrunk")));
  EXPECT_THAT((*region)->Span(0, 4096, "f"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("unregister it")));
  EXPECT_THAT((*region)->CheckIntact("f"), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(SharedMemoryRegistryTest, ShrinkingUnderAnAccessFaultsHarmlesslyAndPoisonsTheRegion) {
  // Arrange: the server's pointer into the region, as a request holds it mid-copy.
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(3 * 4096);
  ASSERT_TRUE(shm.ok());
  std::memset(shm.data(), 7, shm.size());
  absl::StatusOr<SharedMemoryInfo> info = registry.Register("alice", shm.key(), shm.size());
  ASSERT_THAT(info, IsOk());
  auto region = registry.Get("alice", info->handle);
  ASSERT_THAT(region, IsOk());
  absl::StatusOr<std::uint8_t*> span = (*region)->Span(0, shm.size(), "f");
  ASSERT_THAT(span, IsOk());
  volatile std::uint8_t* bytes = *span;
  ASSERT_EQ(bytes[shm.size() - 1], 7);

  // Act: the client truncates; the server then reads past the new end and writes at the start.
  ASSERT_TRUE(shm.Truncate(4096));
  const std::uint8_t read = bytes[shm.size() - 1];  // SIGBUS without the guard
  bytes[0] = 1;
  const absl::Status intact = (*region)->CheckIntact("output.shared_memory.region");

  // Assert: the process lives, the mapping now holds zero pages, the region fails its request.
  EXPECT_EQ(read, 0);
  EXPECT_EQ(shm.data()[0], 7) << "the server's writes must no longer reach the client's pages";
  EXPECT_THAT(intact, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("output.shared_memory.region: the shared-memory object")));
  EXPECT_THAT(registry.Unregister("alice", info->handle), IsOk());
  region->reset();  // unmapping the replaced mapping is fine too
  EXPECT_EQ(Mappings(shm.key()), 1);
}

// How a process ends on a SIGBUS nobody handles: the signal, or a sanitizer's report and exit
// (the handler installed before the guard's, which the guard passes such faults to).
bool DiedOfTheFault(int status) {
  return (WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
         (WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

TEST_F(SharedMemoryRegistryTest, AFaultOutsideEveryRegionStillEndsTheProcess) {
  // The guard must not swallow the server's own bugs: a SIGBUS elsewhere keeps its previous
  // handler or default action.
  SharedMemoryRegistry registry = Registry();
  ShmObject guarded(4096);
  ShmObject unguarded(2 * 4096);
  ASSERT_TRUE(guarded.ok() && unguarded.ok());
  ASSERT_THAT(registry.Register("alice", guarded.key(), 4096), IsOk());  // handler installed
  EXPECT_EXIT(
      {
        unguarded.Truncate(0);
        volatile std::uint8_t* p = unguarded.data();
        p[4096] = 1;
      },
      DiedOfTheFault, "");
}

TEST_F(SharedMemoryRegistryTest, AnObjectIsRegisteredOnceWhateverItsNameOrCaller) {
  // Arrange: a second name for the same object (a hard link in /dev/shm).
  SharedMemoryRegistry registry = Registry();
  ShmObject shm(4096);
  ASSERT_TRUE(shm.ok());
  const std::string alias = shm.key() + "-alias";
  ASSERT_EQ(link(("/dev/shm" + shm.key()).c_str(), ("/dev/shm" + alias).c_str()), 0);
  absl::StatusOr<SharedMemoryInfo> first = registry.Register("alice", shm.key(), 4096);
  ASSERT_THAT(first, IsOk());

  // Act
  const absl::StatusOr<SharedMemoryInfo> again = registry.Register("alice", shm.key(), 4096);
  const absl::StatusOr<SharedMemoryInfo> by_bob = registry.Register("bob", shm.key(), 64);
  const absl::StatusOr<SharedMemoryInfo> by_alias = registry.Register("alice", alias, 4096);
  ASSERT_THAT(registry.Unregister("alice", first->handle), IsOk());
  const absl::StatusOr<SharedMemoryInfo> after = registry.Register("alice", alias, 4096);
  shm_unlink(alias.c_str());

  // Assert
  for (const auto* refused : {&again, &by_bob, &by_alias}) {
    EXPECT_THAT(*refused,
                StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("key: the object \"")));
  }
  EXPECT_THAT(after, IsOk());
  EXPECT_EQ(registry.totals().regions, 1u);
}

TEST_F(SharedMemoryRegistryTest, WithIdentitiesEachRegistersOnlyItsOwnPrefix) {
  // Arrange: alice's object, named under her prefix, as bob would try to take it.
  SharedMemoryRegistry registry = Registry(SharedMemoryKeys::kPerIdentity);
  ShmObject alices(4096, "/alice.");
  ShmObject unprefixed(4096);
  ASSERT_TRUE(alices.ok() && unprefixed.ok());

  // Act
  const absl::StatusOr<SharedMemoryInfo> by_bob = registry.Register("bob", alices.key(), 4096);
  const absl::StatusOr<SharedMemoryInfo> unowned = registry.Register("alice", unprefixed.key(), 64);
  const absl::StatusOr<SharedMemoryInfo> by_alice = registry.Register("alice", alices.key(), 4096);

  // Assert
  EXPECT_THAT(by_bob, StatusIs(absl::StatusCode::kPermissionDenied,
                               HasSubstr("key: \"" + alices.key() +
                                         "\" is not this caller's to register: its objects' names "
                                         "start with \"/bob.\"")));
  EXPECT_THAT(unowned, StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("\"/alice.\"")));
  EXPECT_THAT(by_alice, IsOk());
  EXPECT_EQ(registry.KeyPrefix("bob"), "/bob.");
  EXPECT_EQ(Registry().KeyPrefix("bob"), "");  // one identity: nothing to divide
}

TEST(SharedMemoryKeyPrefix, PlainIdentitiesAsTheyAreOthersInHexNeverOneInsideAnother) {
  EXPECT_EQ(SharedMemoryKeyPrefix("alice"), "/alice.");
  EXPECT_EQ(SharedMemoryKeyPrefix("pacs_viewer-2"), "/pacs_viewer-2.");
  EXPECT_EQ(SharedMemoryKeyPrefix("a.b"), "/.612e62.");
  EXPECT_EQ(SharedMemoryKeyPrefix("viewer@example"), "/.766965776572406578616d706c65.");
  std::string hex65;
  for (int i = 0; i < 65; ++i) hex65 += "61";
  EXPECT_EQ(SharedMemoryKeyPrefix(std::string(64, 'a')), "/" + std::string(64, 'a') + ".");
  EXPECT_EQ(SharedMemoryKeyPrefix(std::string(65, 'a')), "/." + hex65 + ".");
  // No prefix starts another identity's, so no name is under two identities' prefixes.
  const std::vector<std::string> identities = {"a",
                                               "ab",
                                               "a.b",
                                               "a_b",
                                               "612e62",
                                               ".",
                                               "anonymous",
                                               std::string(64, 'x'),
                                               std::string(65, 'x')};
  for (const std::string& x : identities) {
    for (const std::string& y : identities) {
      if (x == y) continue;
      EXPECT_FALSE(absl::StartsWith(SharedMemoryKeyPrefix(y), SharedMemoryKeyPrefix(x)))
          << x << " / " << y;
    }
  }
}

TEST(SharedMemoryKeys, DividedWhereverCallersCanBeToldApart) {
  SecurityOptions security;
  EXPECT_EQ(SharedMemoryKeysFor(security), SharedMemoryKeys::kShared);
  security.tls_cert_file = "server.pem";  // TLS alone: every caller is still "anonymous"
  EXPECT_EQ(SharedMemoryKeysFor(security), SharedMemoryKeys::kShared);
  security.tls_client_ca_file = "clients.pem";
  EXPECT_EQ(SharedMemoryKeysFor(security), SharedMemoryKeys::kPerIdentity);
  security.tls_client_ca_file.clear();
  security.auth_tokens_file = "tokens";
  EXPECT_EQ(SharedMemoryKeysFor(security), SharedMemoryKeys::kPerIdentity);
}

TEST_F(SharedMemoryRegistryTest, OverlapComparesObjectsAndBytesNotAddresses) {
  // One object mapped twice (at two addresses) and another object.
  ShmObject shm(8192);
  ShmObject other(8192);
  ASSERT_TRUE(shm.ok() && other.ok());
  auto a = SharedMemoryRegion::Map(shm.key(), 8192, backend_.get());
  auto b = SharedMemoryRegion::Map(shm.key(), 8192, backend_.get());
  auto c = SharedMemoryRegion::Map(other.key(), 8192, backend_.get());
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(c, IsOk());
  EXPECT_TRUE(SharedBytesOverlap(**a, 0, 100, **b, 50, 100));
  EXPECT_TRUE(SharedBytesOverlap(**a, 150, 10, **b, 50, 101));
  EXPECT_FALSE(SharedBytesOverlap(**a, 0, 100, **b, 100, 100));
  EXPECT_FALSE(SharedBytesOverlap(**a, 100, 100, **b, 0, 100));
  EXPECT_FALSE(SharedBytesOverlap(**a, 0, 100, **c, 0, 100));
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
