#include "server/security/authorization.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

// Payload type of a PERMISSION_DENIED from Authorize: the identity that was refused.
constexpr char kRefusedIdentityPayload[] = "type.cuimg.dev/cuimg.RefusedIdentity";

}  // namespace

absl::StatusOr<std::string> Authorize(const grpc::ServerContextBase& ctx, const AuthPolicy& policy,
                                      unsigned rights, absl::string_view what) {
  if (policy.tokens != nullptr) {
    const auto& metadata = ctx.client_metadata();
    const auto header = metadata.find("authorization");
    if (header == metadata.end()) {
      // "authorization" is call metadata, not a request field: the error names none.
      return MakeError(absl::StatusCode::kUnauthenticated, ErrorReason::kUnauthenticated, "",
                       "authorization: missing (send \"authorization: Bearer TOKEN\")");
    }
    absl::StatusOr<const TokenEntry*> entry = AuthenticateBearer(
        *policy.tokens, absl::string_view(header->second.data(), header->second.size()));
    if (!entry.ok()) return entry.status();
    const unsigned missing = rights & ~(*entry)->rights;
    if (missing != 0) {
      absl::Status denied =
          MakeError(absl::StatusCode::kPermissionDenied, ErrorReason::kPermissionDenied, "",
                    absl::StrCat(what, ": identity '", (*entry)->identity, "' lacks the '",
                                 RightsName(missing), "' right"));
      denied.SetPayload(kRefusedIdentityPayload, absl::Cord((*entry)->identity));
      return denied;
    }
    return (*entry)->identity;
  }
  const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    const std::vector<grpc::string_ref> ids = auth->GetPeerIdentity();
    if (!ids.empty()) return std::string(ids.front().data(), ids.front().size());
  }
  return std::string(kAnonymousIdentity);
}

std::string RefusedIdentity(const absl::Status& status) {
  const absl::optional<absl::Cord> identity = status.GetPayload(kRefusedIdentityPayload);
  return identity.has_value() ? std::string(*identity) : std::string(kUnauthenticatedIdentity);
}

}  // namespace cuimg
