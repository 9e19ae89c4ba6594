#include "cuimg/common/command_line.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, command_line_test_flag, 7, "A flag this test defines.");

namespace cuimg {
namespace {

constexpr char kListed[] = "  --command_line_test_flag (default: 7)";

TEST(DescribeFlagsDefinedIn, ListsTheFlagsOfTheGivenFile) {
  EXPECT_TRUE(absl::StrContains(DescribeFlagsDefinedIn(__FILE__), kListed));
  EXPECT_FALSE(absl::StrContains(DescribeFlagsDefinedIn("elsewhere.cc"), kListed));
}

// Abseil strips a flag's file of its leading slashes; builds that compile with absolute paths
// (every build without ccache's relative ones: CI's) pass an absolute __FILE__.
TEST(DescribeFlagsDefinedIn, MatchesAnAbsolutePathToTheFile) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag("command_line_test_flag");
  ASSERT_NE(flag, nullptr);
  const std::string absolute = absl::StrCat("//", flag->Filename());
  EXPECT_TRUE(absl::StrContains(DescribeFlagsDefinedIn(absolute), kListed));
}

TEST(FindUsageRequest, StopsAtDoubleDash) {
  char program[] = "p", dash[] = "--", help[] = "--help", version[] = "-version";
  char* after[] = {program, dash, help};
  EXPECT_EQ(FindUsageRequest(3, after), UsageRequest::kNone);
  char* before[] = {program, version, dash};
  EXPECT_EQ(FindUsageRequest(3, before), UsageRequest::kVersion);
}

}  // namespace
}  // namespace cuimg
