// Shutdown drains the calls in flight before gRPC's own shutdown (live_calls.h says why): they
// finish with their results while new calls are refused by the service, with its reason.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"
#include "server/rpc/live_calls.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;

TEST(LiveCalls, DrainWaitsForEveryHoldAndRefusesNewCalls) {
  LiveCalls calls;
  absl::StatusOr<LiveCalls::Hold> first = calls.Enter();
  absl::StatusOr<LiveCalls::Hold> second = calls.Enter();
  ASSERT_THAT(first.status(), IsOk());
  ASSERT_THAT(second.status(), IsOk());
  EXPECT_EQ(calls.live(), 2);

  // Out of time with holds left: false, and the calls keep their places.
  EXPECT_FALSE(calls.Drain(absl::Now() + absl::Milliseconds(10)));
  EXPECT_EQ(calls.live(), 2);
  const absl::Status refused = calls.Enter().status();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(ErrorReasonOf(refused), "SHUTTING_DOWN");

  auto drained =
      std::async(std::launch::async, [&] { return calls.Drain(absl::Now() + absl::Seconds(60)); });
  { LiveCalls::Hold moved = *std::move(first); }  // a moved-from hold holds nothing
  EXPECT_EQ(calls.live(), 1);
  EXPECT_EQ(drained.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  *second = LiveCalls::Hold();  // assigning releases the place held
  EXPECT_TRUE(drained.get());
  EXPECT_EQ(calls.live(), 0);
}

double InflightRequests(prometheus::Registry& registry) {
  double total = 0;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "cuimg_inflight_requests") continue;
    for (const prometheus::ClientMetric& metric : family.metric) total += metric.gauge.value;
  }
  return total;
}

TEST(Shutdown, TheCallInFlightFinishesAndNewCallsAreRefusedUntilItHas) {
  ServerOptions options = testing::TestServerOptions();
  options.worker_threads = 1;
  testing::TestServer server(options);
  const Image input = testing::RandomImage(PixelType::kU8, Extent{640, 640, 1}, 7);
  auto slow = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    v1::MorphologyResponse response;
    const grpc::Status status =
        server.stub().Morphology(&ctx, testing::DilateRequest(input, 61), &response);
    return std::make_pair(status.error_code(), response.result().image().data().size());
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (InflightRequests(server.server().registry()) < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "the call never arrived";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto stopped =
      std::async(std::launch::async, [&] { server.server().Shutdown(absl::Seconds(60)); });

  // Once the drain has begun, a new call on the same connection is refused by the service (its
  // reason, not gRPC's GOAWAY), while the slow call still runs.
  grpc::Status refused;
  while (refused.ok() && slow.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    grpc::ClientContext ctx;
    v1::ListModelsResponse models;
    refused = server.stub().ListModels(&ctx, v1::ListModelsRequest(), &models);
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  const std::optional<ErrorDetails> details = ParseErrorDetails(refused);
  ASSERT_TRUE(details.has_value()) << refused.error_message();
  EXPECT_EQ(details->reason, "SHUTTING_DOWN");

  const auto [code, bytes] = slow.get();
  EXPECT_EQ(code, grpc::StatusCode::OK);
  EXPECT_EQ(bytes, 640u * 640u);
  stopped.get();
}

}  // namespace
}  // namespace cuimg
