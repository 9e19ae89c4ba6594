#include "server/state/resident_store.h"

#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<const StoredImage> MakeImage(int bytes) {
  auto image = std::make_shared<StoredImage>();
  image->image = Image(PixelType::kU8, Extent{bytes, 1, 1});
  return image;
}

class ResidentStoreTest : public ::testing::Test {
 protected:
  absl::Time now_ = absl::FromUnixSeconds(1000);
  ResidentStore store_{ResidentStoreOptions{100, 60, 600}, [this] { return now_; }};
};

TEST_F(ResidentStoreTest, HandlesAreInvisibleToOtherIdentities) {
  auto info = store_.Put("alice", MakeImage(10), 0);
  ASSERT_THAT(info, IsOk());
  EXPECT_THAT(store_.Get("alice", info->handle), IsOk());
  EXPECT_THAT(store_.Get("bob", info->handle), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store_.Release("bob", info->handle), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(store_.List("bob").empty());
  EXPECT_EQ(store_.List("alice").size(), 1u);
}

TEST_F(ResidentStoreTest, ExpiresAfterTtlWithoutUse) {
  auto info = store_.Put("alice", MakeImage(10), 30);
  ASSERT_THAT(info, IsOk());
  now_ += absl::Seconds(20);
  EXPECT_THAT(store_.Get("alice", info->handle), IsOk());  // use refreshes
  now_ += absl::Seconds(25);
  EXPECT_THAT(store_.Get("alice", info->handle), IsOk());
  now_ += absl::Seconds(31);
  EXPECT_THAT(store_.Get("alice", info->handle), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(store_.evictions(), 1u);
}

TEST_F(ResidentStoreTest, EvictsLeastRecentlyUsedToFitTheBudget) {
  auto a = store_.Put("alice", MakeImage(40), 0);
  now_ += absl::Seconds(1);
  auto b = store_.Put("alice", MakeImage(40), 0);
  now_ += absl::Seconds(1);
  ASSERT_THAT(store_.Get("alice", a->handle), IsOk());  // a is now more recent than b
  now_ += absl::Seconds(1);
  auto c = store_.Put("alice", MakeImage(40), 0);
  ASSERT_THAT(c, IsOk());
  EXPECT_THAT(store_.Get("alice", a->handle), IsOk());
  EXPECT_THAT(store_.Get("alice", b->handle), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(store_.UsedBytes("alice"), 80u);
  // Another identity's objects are never evicted for alice.
  auto d = store_.Put("bob", MakeImage(90), 0);
  ASSERT_THAT(d, IsOk());
  EXPECT_THAT(store_.Get("alice", a->handle), IsOk());
}

TEST_F(ResidentStoreTest, RejectsObjectsOverTheBudgetAndLongTtls) {
  EXPECT_THAT(store_.Put("alice", MakeImage(101), 0),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(store_.Put("alice", MakeImage(1), 601), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(ResidentStoreTest, ReleaseFreesTheBytes) {
  auto a = store_.Put("alice", MakeImage(40), 0);
  ASSERT_THAT(store_.Release("alice", a->handle), IsOk());
  EXPECT_EQ(store_.UsedBytes("alice"), 0u);
  EXPECT_THAT(store_.Release("alice", a->handle), StatusIs(absl::StatusCode::kNotFound));
}

TEST(ResidentStore, EvictsTheOldestBeyondTheObjectCountLimit) {
  absl::Time now = absl::FromUnixSeconds(1000);
  ResidentStore store(ResidentStoreOptions{1 << 20, 60, 600, 3}, [&now] { return now; });
  std::vector<std::string> handles;
  for (int i = 0; i < 5; ++i) {
    now += absl::Seconds(1);
    auto info = store.Put("alice", MakeImage(1), 0);
    ASSERT_THAT(info, IsOk());
    handles.push_back(info->handle);
  }
  EXPECT_EQ(store.List("alice").size(), 3u);
  EXPECT_THAT(store.Get("alice", handles[0]), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store.Get("alice", handles[1]), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(store.Get("alice", handles[4]), IsOk());
  // The limit is per identity.
  ASSERT_THAT(store.Put("bob", MakeImage(1), 0), IsOk());
  EXPECT_EQ(store.List("alice").size(), 3u);
}

TEST_F(ResidentStoreTest, TellsTheOwnerWhenAndWhyAnObjectWasEvicted) {
  auto a = store_.Put("alice", MakeImage(60), 0);
  now_ += absl::Seconds(1);
  auto b = store_.Put("alice", MakeImage(60), 0);  // evicts a for the budget
  ASSERT_THAT(b, IsOk());
  now_ += absl::Seconds(5);
  const auto evicted = StatusIs(absl::StatusCode::kNotFound,
                                AllOf(HasSubstr(a->handle), HasSubstr("was evicted 5 s ago"),
                                      HasSubstr("resident_budget_bytes")));
  EXPECT_THAT(store_.Get("alice", a->handle), evicted);
  EXPECT_THAT(store_.Describe("alice", a->handle), evicted);
  EXPECT_THAT(store_.Release("alice", a->handle), evicted);
  // To anyone else the handle looks like one that never existed.
  EXPECT_THAT(store_.Get("bob", a->handle),
              StatusIs(absl::StatusCode::kNotFound, Not(HasSubstr("evicted"))));
  // TTL expiry is an eviction too, with its own reason; a release is not.
  now_ += absl::Seconds(61);
  EXPECT_THAT(store_.Get("alice", b->handle),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unused for its TTL of 60 s")));
  auto c = store_.Put("alice", MakeImage(1), 0);
  ASSERT_THAT(store_.Release("alice", c->handle), IsOk());
  EXPECT_THAT(store_.Get("alice", c->handle),
              StatusIs(absl::StatusCode::kNotFound, Not(HasSubstr("evicted"))));
  EXPECT_EQ(store_.evictions(EvictionReason::kBudget), 1u);
  EXPECT_EQ(store_.evictions(EvictionReason::kTtl), 1u);
  EXPECT_EQ(store_.evictions(EvictionReason::kCount), 0u);
  EXPECT_EQ(store_.evictions(), 2u);
}

TEST(ResidentStore, RemembersABoundedNumberOfEvictionsPerIdentity) {
  absl::Time now = absl::FromUnixSeconds(1000);
  ResidentStore store(ResidentStoreOptions{1 << 20, 60, 600, 1}, [&now] { return now; });
  std::vector<std::string> handles;
  for (int i = 0; i < 100; ++i) {
    now += absl::Seconds(1);
    auto info = store.Put("alice", MakeImage(1), 0);  // evicts the previous one (count 1)
    ASSERT_THAT(info, IsOk());
    handles.push_back(info->handle);
  }
  EXPECT_EQ(store.evictions(EvictionReason::kCount), 99u);
  EXPECT_THAT(store.Get("alice", handles[98]),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("resident_max_objects")));
  // The oldest tombstones are gone: a plain NOT_FOUND.
  EXPECT_THAT(store.Get("alice", handles[0]),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no resident object")));
}

TEST(ResidentStore, ServerWideCapEvictsOnlyTheCallersOwnObjects) {
  absl::Time now = absl::FromUnixSeconds(1000);
  ResidentStore store(ResidentStoreOptions{100, 60, 600, 100, 150}, [&now] { return now; });
  EXPECT_EQ(store.max_object_bytes(), 100u);
  auto bob = store.Put("bob", MakeImage(90), 0);
  ASSERT_THAT(bob, IsOk());
  now += absl::Seconds(1);
  auto a = store.Put("alice", MakeImage(31), 0);
  ASSERT_THAT(a, IsOk());
  now += absl::Seconds(1);
  // 90 + 31 + 31 > 150: alice's own older object makes room, never bob's.
  auto b = store.Put("alice", MakeImage(31), 0);
  ASSERT_THAT(b, IsOk());
  EXPECT_THAT(store.Get("bob", bob->handle), IsOk());
  EXPECT_THAT(store.Get("alice", a->handle),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("resident_max_total_bytes")));
  EXPECT_EQ(store.evictions(EvictionReason::kServerCap), 1u);
  // 61 bytes cannot fit beside bob's 90 whatever alice gives up: refused (retry later), and
  // alice keeps what she has.
  EXPECT_THAT(store.CheckRoom("alice", 61),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("retry later")));
  EXPECT_THAT(
      store.Put("alice", MakeImage(61), 0),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("resident_max_total_bytes")));
  EXPECT_THAT(store.Get("alice", b->handle), IsOk());
  EXPECT_THAT(store.CheckRoom("alice", 60), IsOk());
  EXPECT_EQ(store.totals().bytes, 121u);
}

TEST(ResidentStore, CheckRoomRefusesWhatCouldNeverBeStored) {
  ResidentStore store(ResidentStoreOptions{100, 60, 600, 100, 80});
  EXPECT_EQ(store.max_object_bytes(), 80u);
  EXPECT_THAT(store.CheckRoom("alice", 101),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("resident_budget_bytes")));
  EXPECT_THAT(store.CheckRoom("alice", 81),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("server-wide cap")));
  EXPECT_THAT(store.CheckRoom("alice", 80), IsOk());
}

}  // namespace
}  // namespace cuimg
