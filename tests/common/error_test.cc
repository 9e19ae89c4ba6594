// Errors as data (cuimg/common/error.h): reason and field set at the raise site survive
// prefixing and message suffixes, and never come from the message text.
#include "cuimg/common/error.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cuimg {
namespace {

TEST(ErrorTest, CarriesReasonAndFieldBesideTheMessage) {
  const absl::Status s =
      InvalidFieldError(ErrorReason::kValueOutOfRange, "steps[0].element.width", "5000 is big");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "steps[0].element.width: 5000 is big");
  EXPECT_EQ(ErrorReasonOf(s), "VALUE_OUT_OF_RANGE");
  EXPECT_EQ(ErrorFieldOf(s), "steps[0].element.width");
}

TEST(ErrorTest, AnErrorWithoutFieldHasOnlyItsDetailAsMessage) {
  const absl::Status s =
      MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kOverloaded, "", "busy");
  EXPECT_EQ(s.message(), "busy");
  EXPECT_EQ(ErrorReasonOf(s), "OVERLOADED");
  EXPECT_EQ(ErrorFieldOf(s), "");
}

TEST(ErrorTest, PrefixMovesTheFieldAndTheMessageTogether) {
  const absl::Status s = WithFieldPrefix(
      InvalidFieldError(ErrorReason::kFieldRequired, "ratio", "is required"), "request.");
  EXPECT_EQ(s.message(), "request.ratio: is required");
  EXPECT_EQ(ErrorFieldOf(s), "request.ratio");
  EXPECT_EQ(ErrorReasonOf(s), "FIELD_REQUIRED");
}

TEST(ErrorTest, TextThatLooksLikeAFieldIsNotReadAsOne) {
  const absl::Status s = absl::InvalidArgumentError("extent: 3 is too small");
  EXPECT_EQ(ErrorFieldOf(s), "");
  EXPECT_EQ(ErrorReasonOf(s), "");
  EXPECT_EQ(ErrorFieldOf(WithFieldPrefix(s, "input.")), "");
}

TEST(ErrorTest, DefaultReasonNeverReplacesOneSetAtTheRaiseSite) {
  const absl::Status set =
      WithDefaultReason(InvalidFieldError(ErrorReason::kShapeMismatch, "marker", "differs"),
                        ErrorReason::kInternalError);
  EXPECT_EQ(ErrorReasonOf(set), "SHAPE_MISMATCH");
  const absl::Status unset =
      WithDefaultReason(absl::InternalError("boom"), ErrorReason::kInternalError);
  EXPECT_EQ(ErrorReasonOf(unset), "INTERNAL_ERROR");
  EXPECT_TRUE(WithDefaultReason(absl::OkStatus(), ErrorReason::kInternalError).ok());
}

TEST(ErrorTest, SuffixKeepsThePayloads) {
  const absl::Status s = WithMessageSuffix(
      InvalidFieldError(ErrorReason::kDataSizeMismatch, "image.data", "3 bytes"), " (frame 2)");
  EXPECT_EQ(s.message(), "image.data: 3 bytes (frame 2)");
  EXPECT_EQ(ErrorFieldOf(s), "image.data");
  EXPECT_EQ(ErrorReasonOf(s), "DATA_SIZE_MISMATCH");
}

TEST(ErrorTest, ReasonNamesAreDistinctUpperSnakeCase) {
  std::set<std::string> names;
#define CUIMG_TEST_REASON_(name, text) \
  names.insert(std::string(ErrorReasonName(ErrorReason::k##name)));
  CUIMG_ERROR_REASONS(CUIMG_TEST_REASON_)
#undef CUIMG_TEST_REASON_
  for (const std::string& n : names) {
    for (char c : n) EXPECT_TRUE((c >= 'A' && c <= 'Z') || c == '_') << n;
  }
  EXPECT_GT(names.size(), 10u);
}

}  // namespace
}  // namespace cuimg
