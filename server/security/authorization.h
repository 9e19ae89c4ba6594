// Who is calling, and may they do what they ask. The identity namespaces resident objects: one
// identity never sees another's handles.
#ifndef CUIMG_SERVER_AUTHORIZATION_H_
#define CUIMG_SERVER_AUTHORIZATION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/security/auth_tokens.h"

namespace cuimg {

inline constexpr char kAnonymousIdentity[] = "anonymous";
// The identity the request log gives a call refused before it had one (no or an unknown token).
inline constexpr char kUnauthenticatedIdentity[] = "unauthenticated";

struct AuthPolicy {
  // When set, every Imaging call needs a valid bearer token from this table.
  std::shared_ptr<const TokenTable> tokens;
};

// With tokens: the identity of the token in this call's `authorization` header, or
// UNAUTHENTICATED without a valid one, or PERMISSION_DENIED naming
// `what` (the RPC or field) when the token lacks `rights`. Without tokens: the verified client
// certificate's identity (mTLS), else "anonymous".
absl::StatusOr<std::string> Authorize(const grpc::ServerContextBase& ctx, const AuthPolicy& policy,
                                      unsigned rights, absl::string_view what);

// Who an Authorize refusal was for, for the request log: the token's identity for
// PERMISSION_DENIED (the status carries it as a payload, which never reaches the client), else
// kUnauthenticatedIdentity.
std::string RefusedIdentity(const absl::Status& status);

}  // namespace cuimg

#endif  // CUIMG_SERVER_AUTHORIZATION_H_
