// TokenAuthProcessor: gRPC's per-connection-credentials hook on the TLS port. It refuses a call
// whose `authorization` header holds no valid bearer token before any handler runs (and, when
// asked, a call without one, health and reflection included). It attaches nothing to the call:
// gRPC shares one AuthContext among all calls of a connection, so per-call identities set there
// would leak between calls; handlers derive the identity from their own call's header
// (authorization.h).
#ifndef CUIMG_SERVER_AUTH_PROCESSOR_H_
#define CUIMG_SERVER_AUTH_PROCESSOR_H_

#include <grpcpp/security/auth_metadata_processor.h>

#include <memory>

#include "server/security/auth_tokens.h"

namespace cuimg {

class TokenAuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  // `require_token_for_all`: calls without a token are refused here (UNAUTHENTICATED), health
  // and reflection included. Otherwise they pass and ImagingService refuses them, so that health
  // and reflection stay open.
  TokenAuthProcessor(std::shared_ptr<const TokenTable> tokens, bool require_token_for_all);

  // The lookup is a short in-memory scan: run it on gRPC's own thread.
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const std::shared_ptr<const TokenTable> tokens_;
  const bool require_token_for_all_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_AUTH_PROCESSOR_H_
