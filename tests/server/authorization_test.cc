// Who a call is and what it may do: Authorize (the handlers' check) and TokenAuthProcessor (the
// TLS port's check before any handler), each over a table of headers.
#include "server/security/authorization.h"

#include <grpcpp/test/server_context_test_spouse.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/security/auth_processor.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBatchToken[] = "batch-token-0123456789abcdef";

std::shared_ptr<const TokenTable> Tokens() {
  absl::StatusOr<TokenTable> table =
      TokenTable::Parse(absl::StrCat("alice ", kAliceToken, " process,resident\n", "batch ",
                                     kBatchToken, " process\n"),
                        "tokens");
  EXPECT_TRUE(table.ok()) << table.status();
  return std::make_shared<const TokenTable>(*std::move(table));
}

struct AuthCase {
  const char* name;
  std::optional<std::string> header;  // the `authorization` header; nullopt: none sent
  unsigned rights;
  absl::StatusCode code;
  std::string identity_or_message;  // the identity when OK, else a part of the message
};

TEST(Authorize, WithTokensTheHeaderDecides) {
  const AuthPolicy policy{Tokens()};
  const AuthCase cases[] = {
      {"no header", std::nullopt, kRightProcess, absl::StatusCode::kUnauthenticated,
       "authorization: missing"},
      {"basic scheme", "Basic YWxpY2U6cHc=", kRightProcess, absl::StatusCode::kUnauthenticated,
       "authorization: not a bearer token"},
      {"scheme only", "Bearer ", kRightProcess, absl::StatusCode::kUnauthenticated,
       "authorization: not a bearer token"},
      {"unknown token", "Bearer nobody-0123456789abcdef", kRightProcess,
       absl::StatusCode::kUnauthenticated, "authorization: unknown bearer token"},
      {"a prefix of a token", std::string("Bearer ") + std::string(kAliceToken).substr(0, 20),
       kRightProcess, absl::StatusCode::kUnauthenticated, "unknown bearer token"},
      {"valid", std::string("Bearer ") + kAliceToken, kRightProcess | kRightResident,
       absl::StatusCode::kOk, "alice"},
      {"scheme in any case", std::string("bEaReR ") + kAliceToken, kRightProcess,
       absl::StatusCode::kOk, "alice"},
      {"valid, lacking a right", std::string("Bearer ") + kBatchToken, kRightResident,
       absl::StatusCode::kPermissionDenied, "Release: identity 'batch' lacks the 'resident' right"},
      {"valid with the right", std::string("Bearer ") + kBatchToken, kRightProcess,
       absl::StatusCode::kOk, "batch"},
  };
  for (const AuthCase& c : cases) {
    grpc::ServerContext ctx;
    grpc::testing::ServerContextTestSpouse spouse(&ctx);
    if (c.header.has_value()) spouse.AddClientMetadata("authorization", *c.header);
    const absl::StatusOr<std::string> who = Authorize(ctx, policy, c.rights, "Release");
    if (c.code == absl::StatusCode::kOk) {
      ASSERT_TRUE(who.ok()) << c.name << ": " << who.status();
      EXPECT_EQ(*who, c.identity_or_message) << c.name;
    } else {
      EXPECT_THAT(who, StatusIs(c.code, HasSubstr(c.identity_or_message))) << c.name;
      // Its reason, set here ("authorization" is call metadata, no request field).
      EXPECT_EQ(ErrorReasonOf(who.status()), c.code == absl::StatusCode::kUnauthenticated
                                                 ? "UNAUTHENTICATED"
                                                 : "PERMISSION_DENIED")
          << c.name;
      EXPECT_EQ(ErrorFieldOf(who.status()), "") << c.name;
      // A refusal never echoes a token it was sent.
      EXPECT_EQ(who.status().message().find("token-0123"), absl::string_view::npos) << c.name;
    }
  }
}

TEST(Authorize, WithoutTokensACallIsAnonymousWhateverItSends) {
  const AuthPolicy open{};
  grpc::ServerContext ctx;
  grpc::testing::ServerContextTestSpouse spouse(&ctx);
  spouse.AddClientMetadata("authorization", "Bearer anything");
  const absl::StatusOr<std::string> who = Authorize(ctx, open, kAllRights, "Morphology");
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(*who, kAnonymousIdentity);
}

TEST(Authorize, RefusedIdentityNamesWhoWasDenied) {
  const AuthPolicy policy{Tokens()};
  grpc::ServerContext ctx;
  grpc::testing::ServerContextTestSpouse spouse(&ctx);
  spouse.AddClientMetadata("authorization", std::string("Bearer ") + kBatchToken);
  const absl::StatusOr<std::string> who = Authorize(ctx, policy, kRightResident, "Upload");
  EXPECT_EQ(RefusedIdentity(who.status()), "batch");
  EXPECT_EQ(RefusedIdentity(absl::UnauthenticatedError("x")), kUnauthenticatedIdentity);
}

struct ProcessorCase {
  const char* name;
  bool require_token_for_all;
  std::optional<std::string> header;
  grpc::StatusCode code;
};

TEST(TokenAuthProcessor, RefusesBadTokensAndMissingOnesWhenAsked) {
  const ProcessorCase cases[] = {
      {"no header, open health", false, std::nullopt, grpc::StatusCode::OK},
      {"no header, all need a token", true, std::nullopt, grpc::StatusCode::UNAUTHENTICATED},
      {"unknown token", false, "Bearer nobody-0123456789abcdef", grpc::StatusCode::UNAUTHENTICATED},
      {"not bearer", true, "Basic abc", grpc::StatusCode::UNAUTHENTICATED},
      {"valid", true, std::string("Bearer ") + kAliceToken, grpc::StatusCode::OK},
      // Rights are the handler's to judge: the processor only authenticates.
      {"valid without resident", false, std::string("Bearer ") + kBatchToken, grpc::StatusCode::OK},
  };
  for (const ProcessorCase& c : cases) {
    TokenAuthProcessor processor(Tokens(), c.require_token_for_all);
    EXPECT_FALSE(processor.IsBlocking());
    grpc::AuthMetadataProcessor::InputMetadata metadata;
    if (c.header.has_value()) metadata.emplace("authorization", *c.header);
    grpc::AuthMetadataProcessor::OutputMetadata consumed, response;
    const grpc::Status status = processor.Process(metadata, nullptr, &consumed, &response);
    EXPECT_EQ(status.error_code(), c.code) << c.name << ": " << status.error_message();
    if (!status.ok()) {
      EXPECT_NE(status.error_message().find("authorization: "), std::string::npos) << c.name;
    }
    // It attaches nothing (the connection's AuthContext is shared by its calls).
    EXPECT_TRUE(consumed.empty()) << c.name;
    EXPECT_TRUE(response.empty()) << c.name;
  }
}

}  // namespace
}  // namespace cuimg
