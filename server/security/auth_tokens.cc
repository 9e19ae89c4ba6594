#include "server/security/auth_tokens.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

constexpr std::size_t kMinTokenLength = 16;

bool ValidIdentity(absl::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' &&
        c != '@') {
      return false;
    }
  }
  return true;
}

// Compares all of both strings whatever their contents (lengths are not secret: every entry's
// length is compared too).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string RightsName(unsigned rights) {
  std::vector<std::string> names;
  if (rights & kRightProcess) names.push_back("process");
  if (rights & kRightResident) names.push_back("resident");
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::StatusOr<unsigned> ParseRights(absl::string_view text) {
  unsigned rights = 0;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    if (name == "process") {
      rights |= kRightProcess;
    } else if (name == "resident") {
      rights |= kRightResident;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown right '", name, "' (expected process or resident)"));
    }
  }
  return rights;
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text, absl::string_view source) {
  TokenTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    // Errors name the line, never the token.
    const std::string where = absl::StrCat(source, ":", line_number, ": ");
    if (fields.size() < 2 || fields.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(where, "expected IDENTITY TOKEN [RIGHTS]"));
    }
    TokenEntry entry;
    entry.identity = std::string(fields[0]);
    entry.token = std::string(fields[1]);
    if (!ValidIdentity(entry.identity)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "identity must be 1 to 64 of [A-Za-z0-9._@-]"));
    }
    if (entry.token.size() < kMinTokenLength) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "token shorter than ", kMinTokenLength, " characters"));
    }
    if (fields.size() == 3) {
      absl::StatusOr<unsigned> rights = ParseRights(fields[2]);
      if (!rights.ok())
        return absl::InvalidArgumentError(absl::StrCat(where, rights.status().message()));
      entry.rights = *rights;
    }
    if (table.Find(entry.token) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where, "duplicate token"));
    }
    table.entries_.push_back(std::move(entry));
  }
  if (table.entries_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no tokens"));
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

const TokenEntry* TokenTable::Find(absl::string_view token) const {
  const TokenEntry* found = nullptr;
  for (const TokenEntry& e : entries_) {
    if (ConstantTimeEquals(e.token, token)) found = &e;
  }
  return found;
}

absl::StatusOr<const TokenEntry*> AuthenticateBearer(const TokenTable& tokens,
                                                     absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return MakeError(absl::StatusCode::kUnauthenticated, ErrorReason::kUnauthenticated, "",
                     "authorization: not a bearer token (expected \"Bearer TOKEN\")");
  }
  const TokenEntry* entry =
      tokens.Find(absl::StripAsciiWhitespace(authorization.substr(kScheme.size())));
  if (entry == nullptr) {
    return MakeError(absl::StatusCode::kUnauthenticated, ErrorReason::kUnauthenticated, "",
                     "authorization: unknown bearer token");
  }
  return entry;
}

}  // namespace cuimg
