#include "server/state/upload_buffer.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(UploadBuffer, ReservesWhatArrivesNotWhatIsDeclared) {
  InflightBudget budget(std::uint64_t{64} << 20, std::uint64_t{64} << 20);
  auto buffer = UploadBuffer::Create(&budget, std::uint64_t{32} << 20, "image");
  ASSERT_THAT(buffer, IsOk());
  EXPECT_EQ(budget.used(), 0u);
  ASSERT_THAT((*buffer)->Append(std::string(1024, 'a'), "image.data"), IsOk());
  EXPECT_EQ((*buffer)->received(), 1024u);
  EXPECT_EQ((*buffer)->reserved(), std::uint64_t{1} << 20);  // the first step, not 32 MiB
  EXPECT_EQ(budget.used(), (*buffer)->reserved());
}

TEST(UploadBuffer, RefusesObjectsOverHalfThePerRequestLimit) {
  // Growing holds the old and new buffers: up to twice the declared size.
  InflightBudget budget(1000, 100);
  EXPECT_EQ(UploadBuffer::MaxDeclared(budget), 50u);
  EXPECT_THAT(UploadBuffer::Create(&budget, 51, "image"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("max_inflight_bytes_per_device=100")));
  EXPECT_THAT(UploadBuffer::Create(&budget, 50, "image"), IsOk());
}

TEST(UploadBuffer, GrowsByDoublingCappedAtTheDeclaredSizeAndKeepsTheBytes) {
  InflightBudget budget(std::uint64_t{64} << 20, std::uint64_t{64} << 20);
  const std::uint64_t declared = 3 * (std::uint64_t{1} << 20) + 5;
  auto created = UploadBuffer::Create(&budget, declared, "image");
  ASSERT_THAT(created, IsOk());
  UploadBuffer& buffer = **created;
  std::string all;
  for (int i = 0; all.size() < declared; ++i) {
    const std::string chunk(std::min<std::uint64_t>(700000, declared - all.size()),
                            static_cast<char>('a' + i % 26));
    ASSERT_THAT(buffer.Append(chunk, "chunk"), IsOk());
    all += chunk;
    EXPECT_EQ(budget.used(), buffer.reserved());
    EXPECT_LE(buffer.reserved(), declared);
    EXPECT_GE(buffer.reserved(), buffer.received());
  }
  EXPECT_EQ(buffer.reserved(), declared);
  EXPECT_THAT(buffer.Append("x", "chunk"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chunk: the stream carries")));
  Image::Storage bytes = buffer.Take();
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), all);
}

TEST(UploadBuffer, RefusesGrowthTheBudgetCannotHoldAndAppendsNothing) {
  InflightBudget budget(std::uint64_t{3} << 20, std::uint64_t{3} << 20);
  auto other = budget.Reserve(std::uint64_t{3} << 19, "other");  // 1.5 MiB held elsewhere
  ASSERT_THAT(other, IsOk());
  auto created = UploadBuffer::Create(&budget, std::uint64_t{1} << 20 | 1, "image");
  ASSERT_THAT(created, IsOk());
  UploadBuffer& buffer = **created;
  ASSERT_THAT(buffer.Append(std::string(1 << 20, 'a'), "image.data"), IsOk());
  // Growing to 1 MiB + 1 needs the old and new buffer (2 MiB + 1) while the bytes move, beside
  // the 1.5 MiB held elsewhere: refused.
  EXPECT_THAT(buffer.Append("b", "chunk"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("chunk")));
  EXPECT_EQ(buffer.received(), std::uint64_t{1} << 20);
  EXPECT_EQ(budget.used(), (std::uint64_t{3} << 19) + (std::uint64_t{1} << 20));
}

}  // namespace
}  // namespace cuimg
