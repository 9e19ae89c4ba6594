#include "server/resident_store.h"

#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;

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

}  // namespace
}  // namespace cuimg
