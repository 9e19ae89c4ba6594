#include "server/state/upload_quota.h"

#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(UploadQuota, BoundsOpenUploadsPerIdentity) {
  UploadQuota quota(UploadQuotaOptions{2, 1000});
  auto a = quota.Open("alice");
  auto b = quota.Open("alice");
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_THAT(quota.Open("alice"), StatusIs(absl::StatusCode::kResourceExhausted,
                                            HasSubstr("max_uploads_per_identity")));
  EXPECT_THAT(quota.Open("bob"), IsOk());  // per identity
  a->Release();
  EXPECT_EQ(quota.open("alice"), 1);
  EXPECT_THAT(quota.Open("alice"), IsOk());  // a temporary: closed again at once
  EXPECT_EQ(quota.open("alice"), 1);
}

TEST(UploadQuota, BoundsDeclaredBytesPerIdentityAndGivesThemBack) {
  UploadQuota quota(UploadQuotaOptions{8, 1000});
  auto a = quota.Open("alice");
  ASSERT_THAT(a, IsOk());
  EXPECT_THAT(a->Declare(1001, "image"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("image: 1001 bytes exceeds the 1000 bytes")));
  EXPECT_THAT(a->Declare(700, "image"), IsOk());
  EXPECT_THAT(a->Declare(1, "image"), StatusIs(absl::StatusCode::kFailedPrecondition));
  auto b = quota.Open("alice");
  ASSERT_THAT(b, IsOk());
  EXPECT_THAT(b->Declare(301, "mesh"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("retry when")));
  EXPECT_EQ(quota.declared_bytes("alice"), 700u);
  UploadQuota::Slot moved = *std::move(a);
  *a = UploadQuota::Slot();
  EXPECT_EQ(quota.declared_bytes("alice"), 700u);  // the moved-from slot gave nothing back
  moved = UploadQuota::Slot();
  EXPECT_EQ(quota.declared_bytes("alice"), 0u);
  EXPECT_THAT(b->Declare(301, "mesh"), IsOk());
}

}  // namespace
}  // namespace cuimg
