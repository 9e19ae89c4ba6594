// Bearer tokens: a file maps each token to an identity and its rights. One entry per line:
//   IDENTITY TOKEN [RIGHTS]
// RIGHTS is a comma-separated subset of `process` (the image and mesh RPCs) and `resident`
// (objects kept on the server: Upload, Download, Release, ListResident, handles and
// keep_resident); default both. `#` starts a comment. Tokens are at least 16 characters.
#ifndef CUIMG_SERVER_AUTH_TOKENS_H_
#define CUIMG_SERVER_AUTH_TOKENS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cuimg {

enum Right : unsigned {
  kRightProcess = 1u << 0,
  kRightResident = 1u << 1,
};
inline constexpr unsigned kAllRights = kRightProcess | kRightResident;

// "process,resident", "process", ... ("none" for 0).
std::string RightsName(unsigned rights);
// Parses RightsName's form; INVALID_ARGUMENT naming an unknown right.
absl::StatusOr<unsigned> ParseRights(absl::string_view text);

struct TokenEntry {
  std::string identity;
  std::string token;
  unsigned rights = kAllRights;
};

class TokenTable {
 public:
  // `source` names the text in errors (the file's path). INVALID_ARGUMENT for a malformed line,
  // a short token, a duplicate token, or no entry at all.
  static absl::StatusOr<TokenTable> Parse(absl::string_view text, absl::string_view source);
  // NOT_FOUND when the file cannot be read; otherwise as Parse.
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  // The entry holding `token`, or null. Every entry is compared in full, so the time taken does
  // not depend on where (or whether) the token matches.
  const TokenEntry* Find(absl::string_view token) const;
  std::size_t size() const { return entries_.size(); }

 private:
  std::vector<TokenEntry> entries_;
};

// The entry of an `authorization` header's value ("Bearer TOKEN", scheme case-insensitive), or
// UNAUTHENTICATED (malformed, or an unknown token; messages never quote the token).
absl::StatusOr<const TokenEntry*> AuthenticateBearer(const TokenTable& tokens,
                                                     absl::string_view authorization);

}  // namespace cuimg

#endif  // CUIMG_SERVER_AUTH_TOKENS_H_
