// gMock matchers for absl::Status / StatusOr (abseil 20220623 has no status_matchers.h):
// IsOk(), StatusIs(code[, message_matcher]), ErrorIs(code, reason, field) (cuimg/common/error.h's
// payloads).
#ifndef CUIMG_TESTS_TESTING_STATUS_MATCHERS_H_
#define CUIMG_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gmock/gmock.h>

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s;
  return s.ok();
}

MATCHER_P(StatusIs, code, "has status code " + ::testing::PrintToString(code)) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has status code " + ::testing::PrintToString(code) + " and a matching message") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code && ::testing::Matches(message_matcher)(std::string(s.message()));
}

// The error's code, its reason and field payloads (set where it was raised), and a message that
// starts with "<field>: " when it names a field.
MATCHER_P3(ErrorIs, code, reason, field,
           "has status code " + ::testing::PrintToString(code) + ", reason " +
               ::testing::PrintToString(std::string(reason)) + " and field " +
               ::testing::PrintToString(std::string(field))) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s << " (reason " << ErrorReasonOf(s) << ", field "
                   << ErrorFieldOf(s) << ")";
  const std::string f(field);
  return s.code() == code && ErrorReasonOf(s) == std::string(reason) && ErrorFieldOf(s) == f &&
         (f.empty() || absl::StartsWith(s.message(), absl::StrCat(f, ": ")));
}

}  // namespace cuimg::testing

#define CUIMG_ASSERT_OK(expr) ASSERT_THAT((expr), ::cuimg::testing::IsOk())
#define CUIMG_EXPECT_OK(expr) EXPECT_THAT((expr), ::cuimg::testing::IsOk())

#endif  // CUIMG_TESTS_TESTING_STATUS_MATCHERS_H_
