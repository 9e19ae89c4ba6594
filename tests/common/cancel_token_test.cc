// CancelToken::MarkClientGone: a client that leaves at (or just before) its deadline is logged as
// DEADLINE_EXCEEDED, one that leaves earlier as CANCELLED (issue 46: deadlines were CANCELLED).
#include "cuimg/common/cancel_token.h"

#include <chrono>

#include "gtest/gtest.h"

namespace cuimg {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SysClock = std::chrono::system_clock;

TEST(CancelToken, ClientLeavingAtItsDeadlineIsTheDeadline) {
  // Arrange: a 10 s budget; the client's own copy of the deadline passes 30 ms early.
  const SysClock::time_point started = SysClock::now();
  const SysClock::time_point deadline = started + seconds(10);
  CancelToken token(CancelToken::SteadyDeadline(deadline), nullptr);

  // Act
  token.MarkClientGone(started, deadline, deadline - milliseconds(30));

  // Assert
  EXPECT_EQ(token.Check().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(CancelToken, ClientLeavingEarlierCancelled) {
  const SysClock::time_point started = SysClock::now();
  const SysClock::time_point deadline = started + seconds(10);
  CancelToken token(CancelToken::SteadyDeadline(deadline), nullptr);

  token.MarkClientGone(started, deadline, started + seconds(5));

  EXPECT_EQ(token.Check().code(), absl::StatusCode::kCancelled);
}

TEST(CancelToken, SlackIsATenthOfASecondAndTwoPercentOfTheBudget) {
  const SysClock::time_point started{};
  const SysClock::time_point deadline = started + seconds(100);  // slack 2.1 s
  EXPECT_TRUE(CancelToken::ClientDeadlineReached(started, deadline, deadline - milliseconds(2100)));
  EXPECT_FALSE(
      CancelToken::ClientDeadlineReached(started, deadline, deadline - milliseconds(2101)));
  EXPECT_TRUE(CancelToken::ClientDeadlineReached(started, deadline, deadline + seconds(1)));
  const SysClock::time_point short_deadline = started + milliseconds(50);  // slack 101 ms
  EXPECT_TRUE(CancelToken::ClientDeadlineReached(started, short_deadline, started));
}

TEST(CancelToken, NoDeadlineIsAlwaysACancellation) {
  const SysClock::time_point started = SysClock::now();
  CancelToken token(CancelToken::SteadyDeadline(SysClock::time_point::max()), nullptr);

  token.MarkClientGone(started, SysClock::time_point::max(), started + seconds(3600));

  EXPECT_EQ(token.Check().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace cuimg
