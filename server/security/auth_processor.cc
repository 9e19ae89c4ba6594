#include "server/security/auth_processor.h"

#include "absl/strings/string_view.h"

namespace cuimg {

TokenAuthProcessor::TokenAuthProcessor(std::shared_ptr<const TokenTable> tokens,
                                       bool require_token_for_all)
    : tokens_(std::move(tokens)), require_token_for_all_(require_token_for_all) {}

grpc::Status TokenAuthProcessor::Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                                         OutputMetadata*, OutputMetadata*) {
  const auto header = auth_metadata.find("authorization");
  if (header == auth_metadata.end()) {
    if (!require_token_for_all_) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "authorization: missing (send \"authorization: Bearer TOKEN\")");
  }
  absl::StatusOr<const TokenEntry*> entry =
      AuthenticateBearer(*tokens_, absl::string_view(header->second.data(), header->second.size()));
  if (!entry.ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(entry.status().message()));
  }
  return grpc::Status::OK;
}

}  // namespace cuimg
