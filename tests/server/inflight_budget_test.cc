#include "server/state/inflight_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::ErrorIs;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(InflightBudget, RefusesWhenFullAndAdmitsAgainAfterRelease) {
  InflightBudget budget(100, 60);
  auto a = budget.Reserve(60, "a");
  ASSERT_THAT(a, IsOk());
  auto b = budget.Reserve(40, "b");
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(budget.used(), 100u);
  EXPECT_THAT(budget.Reserve(1, "c"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("server busy")));
  // Full for now: worth a retry, and no field is at fault.
  EXPECT_THAT(budget.Reserve(1, "c"),
              ErrorIs(absl::StatusCode::kResourceExhausted, "OVERLOADED", ""));
  *a = InflightBudget::Reservation();  // releases a's 60 bytes
  EXPECT_EQ(budget.used(), 40u);
  EXPECT_THAT(budget.Reserve(60, "c"), IsOk());  // a temporary: released at once
  EXPECT_EQ(budget.used(), 40u);
}

TEST(InflightBudget, RefusesARequestLargerThanThePerRequestLimitNamingTheField) {
  InflightBudget budget(1000, 60);
  EXPECT_THAT(budget.Reserve(61, "input.image"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("input.image: needs about 61 bytes")));
  EXPECT_THAT(budget.Reserve(61, "input.image"),
              ErrorIs(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED", "input.image"));
  // The whole request: no field, and the message says what.
  EXPECT_THAT(budget.Reserve(61, ""), StatusIs(absl::StatusCode::kResourceExhausted,
                                               HasSubstr("the request needs about 61 bytes")));
  EXPECT_THAT(budget.Reserve(61, ""),
              ErrorIs(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED", ""));
  EXPECT_EQ(budget.used(), 0u);
}

TEST(InflightBudget, MovedReservationsReleaseOnce) {
  InflightBudget budget(100, 100);
  auto a = budget.Reserve(30, "a");
  ASSERT_THAT(a, IsOk());
  InflightBudget::Reservation moved = *std::move(a);
  InflightBudget::Reservation target;
  target = std::move(moved);
  EXPECT_EQ(target.bytes(), 30u);
  EXPECT_EQ(budget.used(), 30u);
  target = InflightBudget::Reservation();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(InflightBudget, ResizeGrowsWithinTheBudgetAndShrinksAlways) {
  InflightBudget budget(100, 80);
  auto other = budget.Reserve(30, "other");
  ASSERT_THAT(other, IsOk());
  auto upload = budget.Reserve(0, "upload");
  ASSERT_THAT(upload, IsOk());
  EXPECT_THAT(upload->Resize(50, "chunk"), IsOk());
  EXPECT_EQ(budget.used(), 80u);
  // Past the capacity: refused, the reservation unchanged.
  EXPECT_THAT(upload->Resize(71, "chunk"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("chunk needs 21 more")));
  EXPECT_EQ(upload->bytes(), 50u);
  // Past the per-request limit: refused whatever is free.
  *other = InflightBudget::Reservation();
  EXPECT_THAT(upload->Resize(81, "chunk"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("chunk: needs about 81")));
  EXPECT_THAT(upload->Resize(10, "chunk"), IsOk());
  EXPECT_EQ(budget.used(), 10u);
  *upload = InflightBudget::Reservation();
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_THAT(InflightBudget::Reservation().Resize(1, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(InflightBudget, ConcurrentReservationsNeverExceedTheCapacity) {
  InflightBudget budget(64, 8);
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto r = budget.Reserve(8, "r");
        if (!r.ok()) {
          refused.fetch_add(1);
          continue;
        }
        EXPECT_LE(budget.used(), 64u);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace cuimg
