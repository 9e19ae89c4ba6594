#include "server/security/auth_tokens.h"

#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(TokenTable, ParsesIdentitiesTokensAndRights) {
  auto table = TokenTable::Parse(
      "# comment\n"
      "alice  aaaaaaaaaaaaaaaa1  process,resident\n"
      "\n"
      "batch\tbbbbbbbbbbbbbbbb2 process   # trailing comment\n"
      "carol cccccccccccccccc3\r\n",
      "tokens");
  ASSERT_THAT(table, IsOk());
  EXPECT_EQ(table->size(), 3u);
  const TokenEntry* alice = table->Find("aaaaaaaaaaaaaaaa1");
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(alice->identity, "alice");
  EXPECT_EQ(alice->rights, kAllRights);
  const TokenEntry* batch = table->Find("bbbbbbbbbbbbbbbb2");
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->rights, unsigned{kRightProcess});
  EXPECT_EQ(table->Find("cccccccccccccccc3")->rights, kAllRights);
  EXPECT_EQ(table->Find("aaaaaaaaaaaaaaaa"), nullptr);    // a prefix is not the token
  EXPECT_EQ(table->Find("aaaaaaaaaaaaaaaa12"), nullptr);  // nor an extension
  EXPECT_EQ(table->Find(""), nullptr);
}

TEST(TokenTable, RejectsBadLinesNamingTheLineButNeverTheToken) {
  const std::pair<const char*, const char*> cases[] = {
      {"alice\n", "tokens:1: expected IDENTITY TOKEN"},
      {"alice shorttoken\n", "tokens:1: token shorter than 16"},
      {"al!ce aaaaaaaaaaaaaaaa1\n", "tokens:1: identity must be"},
      {"alice aaaaaaaaaaaaaaaa1 admin\n", "tokens:1: unknown right 'admin'"},
      {"a aaaaaaaaaaaaaaaa1\nb aaaaaaaaaaaaaaaa1\n", "tokens:2: duplicate token"},
      {"# nothing\n", "tokens: no tokens"},
      {"a aaaaaaaaaaaaaaaa1 process extra\n", "tokens:1: expected IDENTITY TOKEN"},
  };
  for (const auto& [text, message] : cases) {
    auto table = TokenTable::Parse(text, "tokens");
    EXPECT_THAT(table, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message))) << text;
    EXPECT_THAT(table.status().message(), Not(HasSubstr("aaaaaaaaaaaaaaaa1"))) << text;
  }
}

TEST(TokenTable, LoadReportsAMissingFile) {
  EXPECT_THAT(TokenTable::Load("/nonexistent/tokens"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(Rights, RoundTripThroughTheirNames) {
  EXPECT_EQ(RightsName(kAllRights), "process,resident");
  EXPECT_EQ(RightsName(kRightResident), "resident");
  EXPECT_EQ(RightsName(0), "none");
  EXPECT_EQ(*ParseRights("resident,process"), kAllRights);
  EXPECT_THAT(ParseRights(""), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cuimg
