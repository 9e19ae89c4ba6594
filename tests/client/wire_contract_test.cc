// proto/wire_contract.h: the timing trailer reads back what it writes and tolerates other
// servers' trailers; the error details read back what they carry; status names are gRPC's.
#include "proto/wire_contract.h"

#include <gtest/gtest.h>

namespace cuimg {
namespace {

TEST(TimingTrailerTest, ParsesWhatItFormats) {
  const TimingTrailer sent{1.5, 2.0, 30.25, 400.0, 5.5, 450.0, 3, 3};
  const std::string text = FormatTimingTrailer(sent);
  EXPECT_EQ(text,
            "queue_us=1.5 decode_us=2.0 h2d_us=30.2 kernel_us=400.0 d2h_us=5.5 total_us=450.0 "
            "device=3 decode_device=3");
  const TimingTrailer read = ParseTimingTrailer(text);
  EXPECT_DOUBLE_EQ(read.queue_us, 1.5);
  EXPECT_DOUBLE_EQ(read.decode_us, 2.0);
  EXPECT_DOUBLE_EQ(read.h2d_us, 30.2);
  EXPECT_DOUBLE_EQ(read.kernel_us, 400.0);
  EXPECT_DOUBLE_EQ(read.d2h_us, 5.5);
  EXPECT_DOUBLE_EQ(read.total_us, 450.0);
  EXPECT_EQ(read.device, 3);
  EXPECT_EQ(read.decode_device, 3);
}

TEST(TimingTrailerTest, AbsentAndMalformedFieldsReadMinusOne) {
  // An older server's trailer (no decode_us), an unknown key, and malformed fields.
  const TimingTrailer read =
      ParseTimingTrailer("queue_us=7 future_us=9  kernel_us=abc h2d_us= =4 d2h_us=1=2 total_us=8");
  EXPECT_DOUBLE_EQ(read.queue_us, 7);
  EXPECT_DOUBLE_EQ(read.decode_us, -1);
  EXPECT_DOUBLE_EQ(read.kernel_us, -1);
  EXPECT_DOUBLE_EQ(read.h2d_us, -1);
  EXPECT_DOUBLE_EQ(read.d2h_us, -1);
  EXPECT_DOUBLE_EQ(read.total_us, 8);
  EXPECT_EQ(read.device, -1);
  EXPECT_EQ(read.decode_device, -1);
  const TimingTrailer empty = ParseTimingTrailer("");
  EXPECT_DOUBLE_EQ(empty.total_us, -1);
}

TEST(ErrorDetailsTest, ReadsBackReasonDomainAndField) {
  const grpc::Status status =
      StatusWithErrorInfo(grpc::StatusCode::NOT_FOUND, "handle: gone", "NOT_FOUND", "handle");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "handle: gone");
  const std::optional<ErrorDetails> details = ParseErrorDetails(status);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->reason, "NOT_FOUND");
  EXPECT_EQ(details->domain, kErrorDomain);
  EXPECT_EQ(details->field, "handle");

  const std::optional<ErrorDetails> fieldless =
      ParseErrorDetails(StatusWithErrorInfo(grpc::StatusCode::INTERNAL, "broken", "INTERNAL", ""));
  ASSERT_TRUE(fieldless.has_value());
  EXPECT_EQ(fieldless->field, "");
}

TEST(ErrorDetailsTest, NoneWithoutDetailsOrWithGarbage) {
  EXPECT_FALSE(ParseErrorDetails(grpc::Status(grpc::StatusCode::UNAVAILABLE, "gRPC's own")));
  EXPECT_FALSE(ParseErrorDetails(
      grpc::Status(grpc::StatusCode::INTERNAL, "x", std::string("\xff\xff\xff", 3))));
}

TEST(ErrorDetailsTest, SurviveTheTripThroughAnAbslStatus) {
  const grpc::Status sent =
      StatusWithErrorInfo(grpc::StatusCode::INVALID_ARGUMENT, "steps[0].element.width: 0 is small",
                          "VALUE_OUT_OF_RANGE", "steps[0].element.width");
  const absl::Status passed = FromGrpcStatus(sent);
  EXPECT_EQ(passed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(passed.message(), "steps[0].element.width: 0 is small");
  const std::optional<ErrorDetails> details = ParseErrorDetails(passed);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->reason, "VALUE_OUT_OF_RANGE");
  EXPECT_EQ(details->field, "steps[0].element.width");
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_FALSE(ParseErrorDetails(absl::InvalidArgumentError("no details")).has_value());
}

TEST(DescribeRpcErrorTest, PrintsCodeReasonAndTheFieldTheMessageDoesNotStartWith) {
  EXPECT_EQ(DescribeRpcError(StatusWithErrorInfo(grpc::StatusCode::INVALID_ARGUMENT,
                                                 "steps[0].element.width: 5000 is big",
                                                 "ELEMENT_TOO_LARGE", "steps[0].element.width")),
            "INVALID_ARGUMENT [ELEMENT_TOO_LARGE] steps[0].element.width: 5000 is big");
  EXPECT_EQ(DescribeRpcError(StatusWithErrorInfo(grpc::StatusCode::INVALID_ARGUMENT,
                                                 "the stream ended early (frame 2)",
                                                 "DATA_SIZE_MISMATCH", "slab")),
            "INVALID_ARGUMENT [DATA_SIZE_MISMATCH] the stream ended early (frame 2) (field: slab)");
  EXPECT_EQ(DescribeRpcError(StatusWithErrorInfo(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                 "server busy", "OVERLOADED", "")),
            "RESOURCE_EXHAUSTED [OVERLOADED] server busy");
  // gRPC's own errors carry no ErrorInfo.
  EXPECT_EQ(DescribeRpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed")),
            "UNAVAILABLE Socket closed");
  EXPECT_EQ(
      DescribeRpcError(FromGrpcStatus(StatusWithErrorInfo(
          grpc::StatusCode::NOT_FOUND, "model: 'x' is not loaded", "MODEL_NOT_FOUND", "model"))),
      "NOT_FOUND [MODEL_NOT_FOUND] model: 'x' is not loaded");
}

TEST(StatusCodeNameTest, NamesAreGrpcs) {
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
}

}  // namespace
}  // namespace cuimg
