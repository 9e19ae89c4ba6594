// Log lines and echoed client values stay one bounded line of valid logfmt whatever a client
// sends (the forged-line and megabyte-handle attacks of issue #38), and refused requests' lines
// are rate-limited with a count of what was left out.
#include "server/observability/log.h"

#include <grpcpp/test/server_context_test_spouse.h>

#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/wire_contract.h"
#include "server/observability/log_throttle.h"
#include "server/rpc/status_conversion.h"
#include "server/security/auth_tokens.h"
#include "server/security/authorization.h"
#include "server/security/untrusted_text.h"

namespace cuimg {
namespace {

constexpr char kForgery[] = "x\" \n ts=2026 level=error identity=admin code=OK message=\"y";

// A strict logfmt reader: key=bare or key="escaped"; false on anything else (a stray quote, a
// raw control byte, a missing '=').
bool ParseLogfmt(const std::string& line, std::vector<std::pair<std::string, std::string>>* out) {
  std::size_t i = 0;
  while (i < line.size()) {
    const std::size_t eq = line.find('=', i);
    if (eq == std::string::npos || eq == i) return false;
    const std::string key = line.substr(i, eq - i);
    for (char c : key) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    }
    i = eq + 1;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      ++i;
      for (;; ++i) {
        if (i >= line.size()) return false;
        const char c = line[i];
        if (c == '"') break;
        if (c < ' ' || c > '~') return false;
        if (c == '\\') {
          if (++i >= line.size()) return false;
          value.push_back('\\');
        }
        value.push_back(line[i]);
      }
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ') {
        const char c = line[i++];
        if (c <= ' ' || c > '~' || c == '"' || c == '=') return false;
        value.push_back(c);
      }
    }
    out->emplace_back(key, value);
    if (i < line.size()) {
      if (line[i] != ' ') return false;
      ++i;
    }
  }
  return true;
}

TEST(UntrustedText, EscapesEverythingButPrintableAscii) {
  const std::string text("a \"b\" 'c' \\ \n\r\t\x01\x7f\xe2\x80\xa8", 20);
  std::string out;
  AppendEscaped(text, 100, '"', &out);
  EXPECT_EQ(out, R"(a \"b\" 'c' \\ \n\r\t\x01\x7f\xe2\x80\xa8)");
  out.clear();
  AppendEscaped(text, 100, '\'', &out);
  EXPECT_EQ(out, R"(a "b" \'c\' \\ \n\r\t\x01\x7f\xe2\x80\xa8)");
}

TEST(UntrustedText, CutsLongTextAndSaysHowLongItWas) {
  std::string out;
  AppendEscaped(std::string(1 << 20, 'h'), 4, '"', &out);
  EXPECT_EQ(out, "hhhh...[1048576 bytes]");
  out.clear();
  AppendEscaped("hhhh", 4, '"', &out);
  EXPECT_EQ(out, "hhhh");
}

TEST(UntrustedText, QuotedClientValuesAreShortAndOneLine) {
  EXPECT_EQ(QuoteClientValue("img-1"), "'img-1'");
  EXPECT_EQ(QuoteClientValue("a'b\nc"), R"('a\'b\nc')");
  const std::string quoted = QuoteClientValue(std::string(1 << 20, 'h'));
  EXPECT_EQ(quoted,
            absl::StrCat("'", std::string(kMaxEchoedValueBytes, 'h'), "...[1048576 bytes]'"));
}

TEST(FormatLogFields, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(FormatLogFields({{"rpc", "Morphology"},
                             {"device", -1},
                             {"serving", true},
                             {"empty", ""},
                             {"spaced", "a b"},
                             {"eq", "a=b"}}),
            R"(rpc=Morphology device=-1 serving=1 empty="" spaced="a b" eq="a=b")");
}

TEST(FormatLogFields, AForgedLineStaysInsideItsValue) {
  const std::string line =
      FormatLogFields({{"rpc", "Release"}, {"message", absl::StrCat("handle: ", kForgery)}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  std::vector<std::pair<std::string, std::string>> fields;
  ASSERT_TRUE(ParseLogfmt(line, &fields)) << line;
  ASSERT_EQ(fields.size(), 2u) << line;
  EXPECT_EQ(fields[0], std::make_pair(std::string("rpc"), std::string("Release")));
  EXPECT_EQ(fields[1].first, "message");
  EXPECT_EQ(fields[1].second,
            R"(handle: x\" \n ts=2026 level=error identity=admin code=OK message=\"y)");
}

TEST(FormatLogFields, AMegabyteValueIsCut) {
  const std::string line = FormatLogFields({{"message", std::string(1 << 20, 'h')}});
  EXPECT_LT(line.size(), kMaxLogValueBytes + 40);
  EXPECT_NE(line.find("...[1048576 bytes]\""), std::string::npos) << line.substr(500);
  std::vector<std::pair<std::string, std::string>> fields;
  EXPECT_TRUE(ParseLogfmt(line, &fields));
}

TEST(LogLine, NeverWritesTwoLines) {
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kWarning, "event=test value=", kForgery);
  LogEvent(LogLevel::kWarning, "test", {{"value", kForgery}});
  Log(LogLevel::kWarning, "event=test value=", std::string(1 << 20, 'h'));
  const std::string written = ::testing::internal::GetCapturedStderr();
  const std::vector<std::string> lines = absl::StrSplit(written, '\n');
  ASSERT_EQ(lines.size(), 4u) << written.substr(0, 2000);  // three lines and the empty rest
  EXPECT_NE(lines[0].find(R"(value=x" \n ts=2026)"), std::string::npos) << lines[0];
  std::vector<std::pair<std::string, std::string>> fields;
  EXPECT_TRUE(ParseLogfmt(lines[1], &fields)) << lines[1];
  EXPECT_EQ(fields.size(), 4u) << lines[1];  // ts, level, event, value
  EXPECT_LT(lines[2].size(), kMaxLogLineBytes + 100);
  EXPECT_NE(lines[2].find(absl::StrCat(" ...[", 17 + (1 << 20), " bytes]")), std::string::npos);
}

TEST(LogThrottle, AdmitsABurstThenTheRateAndCountsTheRest) {
  LogThrottle throttle(/*lines_per_second=*/2, /*burst=*/3);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += throttle.Admit("rpc=A code=X", t0);
  EXPECT_EQ(admitted, 3);
  // Two lines a second after that: 10 s of a steady flood write 20 more.
  for (int ms = 10; ms <= 10000; ms += 10) {
    admitted += throttle.Admit("rpc=A code=X", t0 + absl::Milliseconds(ms));
  }
  EXPECT_EQ(admitted, 23);
  EXPECT_EQ(throttle.TakeSuppressed(),
            (std::vector<std::pair<std::string, std::int64_t>>{{"rpc=A code=X", 1100 - 23}}));
  EXPECT_TRUE(throttle.TakeSuppressed().empty());
}

TEST(LogThrottle, KeysHaveTheirOwnBuckets) {
  LogThrottle throttle(1, 1);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(throttle.Admit("rpc=A code=X", t0));
  EXPECT_FALSE(throttle.Admit("rpc=A code=X", t0));
  EXPECT_TRUE(throttle.Admit("rpc=A code=Y", t0));
  EXPECT_FALSE(throttle.Admit("rpc=A code=Y", t0));
  EXPECT_FALSE(throttle.Admit("rpc=A code=Y", t0));
  EXPECT_EQ(throttle.TakeSuppressed(), (std::vector<std::pair<std::string, std::int64_t>>{
                                           {"rpc=A code=X", 1}, {"rpc=A code=Y", 2}}));
}

TEST(LogThrottle, TimeGoingBackRefillsNothing) {
  LogThrottle throttle(1, 1);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(throttle.Admit("k", t0));
  EXPECT_FALSE(throttle.Admit("k", t0 - absl::Seconds(5)));
  EXPECT_FALSE(throttle.Admit("k", t0 + absl::Milliseconds(500)));
  EXPECT_TRUE(throttle.Admit("k", t0 + absl::Milliseconds(1000)));
}

TEST(StatusConversion, AMegabyteMessageStillReachesTheClient) {
  const grpc::Status status =
      ToGrpcStatus(absl::NotFoundError(absl::StrCat("handle: ", std::string(1 << 20, 'h'))));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(
      status.error_message(),
      absl::StrCat("handle: ", std::string(kMaxStatusMessageBytes - 8, 'h'), "...[1048584 bytes]"));
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("short")).error_message(), "short");
}

TEST(RefusedIdentity, NamesTheTokensIdentityOrUnauthenticated) {
  absl::StatusOr<TokenTable> table =
      TokenTable::Parse("batch batch-token-0123456789abcdef process\n", "tokens");
  ASSERT_TRUE(table.ok()) << table.status();
  const AuthPolicy policy{std::make_shared<const TokenTable>(*std::move(table))};
  grpc::ServerContext without_token;
  const absl::StatusOr<std::string> missing =
      Authorize(without_token, policy, kRightProcess, "Morphology");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(RefusedIdentity(missing.status()), kUnauthenticatedIdentity);
  grpc::ServerContext with_token;
  grpc::testing::ServerContextTestSpouse spouse(&with_token);  // owns the metadata's bytes
  spouse.AddClientMetadata("authorization", "Bearer batch-token-0123456789abcdef");
  const absl::StatusOr<std::string> denied =
      Authorize(with_token, policy, kRightResident, "Release");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(RefusedIdentity(denied.status()), "batch");
  // The payload is the server's: the client gets the code, the message and the ErrorInfo
  // (wire_contract.h), never the payload.
  const grpc::Status sent = ToGrpcStatus(denied.status());
  EXPECT_EQ(sent.error_message(), "Release: identity 'batch' lacks the 'resident' right");
  EXPECT_EQ(sent.error_details().find("RefusedIdentity"), std::string::npos);
  const std::optional<ErrorDetails> details = ParseErrorDetails(sent);
  ASSERT_TRUE(details.has_value());
  EXPECT_EQ(details->reason, "PERMISSION_DENIED");
  EXPECT_EQ(details->field, "");
}

}  // namespace
}  // namespace cuimg
