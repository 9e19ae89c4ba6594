// ToGrpcStatus: the code, the cut message, and the ErrorInfo carrying the reason and field set
// where the error was raised (never read from the message); the reason list equals the proto's.
#include "server/rpc/status_conversion.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cuimg/common/error.h"
#include "cuimg/v1/error_reason.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

TEST(ToGrpcStatusTest, CarriesCodeMessageAndTheRaiseSitesReasonAndField) {
  const grpc::Status sent = ToGrpcStatus(
      InvalidFieldError(ErrorReason::kValueOutOfRange, "kernel_length", "4 is not odd"));
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(sent.error_message(), "kernel_length: 4 is not odd");
  const std::optional<ErrorDetails> details = ParseErrorDetails(sent);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->reason, "VALUE_OUT_OF_RANGE");
  EXPECT_EQ(details->domain, "cuimg.io");
  EXPECT_EQ(details->field, "kernel_length");
}

TEST(ToGrpcStatusTest, AMessageThatStartsLikeAFieldNamesNone) {
  const grpc::Status sent = ToGrpcStatus(absl::InvalidArgumentError("extent: 3x3 is too small"));
  const std::optional<ErrorDetails> details = ParseErrorDetails(sent);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->field, "");
  EXPECT_EQ(details->reason, "INTERNAL_ERROR");
}

TEST(ToGrpcStatusTest, AnErrorWithoutAReasonGetsOneByItsCode) {
  const struct {
    absl::Status status;
    const char* reason;
  } cases[] = {
      {absl::CancelledError("gone"), "CANCELLED"},
      {absl::DeadlineExceededError("late"), "DEADLINE_TOO_SHORT"},
      {absl::UnavailableError("device lost"), "UNAVAILABLE"},
      {absl::ResourceExhaustedError("out of device memory"), "OVERLOADED"},
      {absl::InternalError("launch failed"), "INTERNAL_ERROR"},
      {absl::InvalidArgumentError("unclassified"), "INTERNAL_ERROR"},
      {absl::NotFoundError("unclassified"), "INTERNAL_ERROR"},
      {absl::PermissionDeniedError("unclassified"), "INTERNAL_ERROR"},
      {absl::UnauthenticatedError("unclassified"), "INTERNAL_ERROR"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(WireReason(c.status), c.reason) << c.status;
    const std::optional<ErrorDetails> details = ParseErrorDetails(ToGrpcStatus(c.status));
    ASSERT_TRUE(details.has_value()) << c.status;
    EXPECT_EQ(details->reason, c.reason) << c.status;
  }
  // A reason set where the error was raised always wins.
  EXPECT_EQ(WireReason(MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kWorkTooLarge,
                                 "", "split it")),
            "WORK_TOO_LARGE");
}

TEST(ToGrpcStatusTest, OkCarriesNoDetails) {
  const grpc::Status sent = ToGrpcStatus(absl::OkStatus());
  EXPECT_TRUE(sent.ok());
  EXPECT_TRUE(sent.error_details().empty());
  EXPECT_EQ(WireReason(absl::OkStatus()), "");
}

TEST(ToGrpcStatusTest, CutsLongMessagesAndKeepsTheField) {
  const absl::Status status = MakeError(absl::StatusCode::kNotFound, ErrorReason::kHandleNotFound,
                                        "input.handle", std::string(5000, 'x'));
  const std::string message(status.message());
  const grpc::Status sent = ToGrpcStatus(status);
  EXPECT_EQ(sent.error_message().substr(0, kMaxStatusMessageBytes),
            message.substr(0, kMaxStatusMessageBytes));
  EXPECT_NE(sent.error_message().find("...[5014 bytes]"), std::string::npos);
  ASSERT_TRUE(ParseErrorDetails(sent).has_value());
  EXPECT_EQ(ParseErrorDetails(sent)->field, "input.handle");
  EXPECT_EQ(ParseErrorDetails(sent)->reason, "HANDLE_NOT_FOUND");
}

// The documented list (error_reason.proto) and the server's (CUIMG_ERROR_REASONS) hold the same
// names: ERROR_REASON_<NAME> for each NAME, and nothing else but ERROR_REASON_UNSPECIFIED = 0.
TEST(ErrorReasonProtoTest, ListsExactlyTheServersReasons) {
  std::set<std::string> server;
#define CUIMG_TEST_REASON_(name, text) server.insert(text);
  CUIMG_ERROR_REASONS(CUIMG_TEST_REASON_)
#undef CUIMG_TEST_REASON_
  const google::protobuf::EnumDescriptor* proto = v1::ErrorReason_descriptor();
  std::set<std::string> listed;
  std::set<int> numbers;
  const std::string prefix = "ERROR_REASON_";
  for (int i = 0; i < proto->value_count(); ++i) {
    const std::string name = proto->value(i)->name();
    ASSERT_EQ(name.compare(0, prefix.size(), prefix), 0) << name;
    EXPECT_TRUE(numbers.insert(proto->value(i)->number()).second) << name;
    if (name == "ERROR_REASON_UNSPECIFIED") {
      EXPECT_EQ(proto->value(i)->number(), 0);
      continue;
    }
    listed.insert(name.substr(prefix.size()));
  }
  EXPECT_EQ(listed, server);
  EXPECT_EQ(proto->value_count(), static_cast<int>(server.size()) + 1);
}

}  // namespace
}  // namespace cuimg
