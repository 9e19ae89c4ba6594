// ToGrpcStatus: the code, the cut message, and the ErrorInfo naming the field (the convention
// ErrorField reads).
#include "server/rpc/status_conversion.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/wire_contract.h"

namespace cuimg {
namespace {

struct FieldCase {
  absl::Status status;
  std::string field;
};

TEST(ErrorFieldTest, ReadsTheLeadingPathOfTheCodesThatJudgeContent) {
  const FieldCase cases[] = {
      {absl::InvalidArgumentError("input.image.width: must be at least 1"), "input.image.width"},
      {absl::InvalidArgumentError("steps[2].element.radius: over 64"), "steps[2].element.radius"},
      {absl::InvalidArgumentError("steps[10]: unknown op"), "steps[10]"},
      {absl::NotFoundError("model: \"x\" is not loaded"), "model"},
      {absl::ResourceExhaustedError("output.keep_resident: over the budget"),
       "output.keep_resident"},
      {absl::FailedPreconditionError("input.shared_memory.region: unknown"),
       "input.shared_memory.region"},
      {absl::OutOfRangeError("mesh.handle: gone"), "mesh.handle"},
      // Not a field: no path before ": ", or a path that is not one.
      {absl::InvalidArgumentError("the request is empty"), ""},
      {absl::InvalidArgumentError("shared memory is for clients: local only"), ""},
      {absl::InvalidArgumentError("Input.width: capital"), ""},
      {absl::InvalidArgumentError("steps[]: empty index"), ""},
      {absl::InvalidArgumentError("steps[2]x: junk after the index"), ""},
      {absl::InvalidArgumentError("input.: empty name"), ""},
      {absl::InvalidArgumentError("2d: starts with a digit"), ""},
      {absl::InvalidArgumentError("input.width:no space"), ""},
      // Codes that do not judge the request's content name no field.
      {absl::UnauthenticatedError("authorization: no token"), ""},
      {absl::DeadlineExceededError("upload: nothing received"), ""},
      {absl::InternalError("kernel: launch failed"), ""},
      {absl::OkStatus(), ""},
  };
  for (const FieldCase& c : cases) {
    EXPECT_EQ(ErrorField(c.status), c.field) << c.status;
  }
}

TEST(ToGrpcStatusTest, CarriesCodeMessageAndErrorInfo) {
  const grpc::Status sent = ToGrpcStatus(absl::InvalidArgumentError("kernel_length: must be odd"));
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(sent.error_message(), "kernel_length: must be odd");
  const std::optional<ErrorDetails> details = ParseErrorDetails(sent);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->reason, "INVALID_ARGUMENT");
  EXPECT_EQ(details->domain, "cuimg.io");
  EXPECT_EQ(details->field, "kernel_length");
}

TEST(ToGrpcStatusTest, AnErrorWithoutAFieldStillCarriesItsReason) {
  const grpc::Status sent = ToGrpcStatus(absl::UnavailableError("the server is stopping"));
  const std::optional<ErrorDetails> details = ParseErrorDetails(sent);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->reason, "UNAVAILABLE");
  EXPECT_EQ(details->field, "");
}

TEST(ToGrpcStatusTest, OkCarriesNoDetails) {
  const grpc::Status sent = ToGrpcStatus(absl::OkStatus());
  EXPECT_TRUE(sent.ok());
  EXPECT_TRUE(sent.error_details().empty());
}

TEST(ToGrpcStatusTest, CutsLongMessagesAndKeepsTheField) {
  const std::string long_message = "input.handle: " + std::string(5000, 'x');
  const grpc::Status sent = ToGrpcStatus(absl::NotFoundError(long_message));
  EXPECT_EQ(sent.error_message().substr(0, kMaxStatusMessageBytes),
            long_message.substr(0, kMaxStatusMessageBytes));
  EXPECT_NE(sent.error_message().find("...[5014 bytes]"), std::string::npos);
  ASSERT_TRUE(ParseErrorDetails(sent).has_value());
  EXPECT_EQ(ParseErrorDetails(sent)->field, "input.handle");
}

}  // namespace
}  // namespace cuimg
