// The gRPC port's credentials from SecurityOptions: plaintext, TLS, or mutual TLS, with the
// bearer-token processor when a token file is given.
#ifndef CUIMG_SERVER_TRANSPORT_SECURITY_H_
#define CUIMG_SERVER_TRANSPORT_SECURITY_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/security/authorization.h"
#include "server/server_options.h"

namespace cuimg {

struct TransportSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  AuthPolicy policy;
  // For the start-up log, e.g. "transport=mtls tokens=3".
  std::string description;
};

// INVALID_ARGUMENT naming the option for inconsistent settings (a key without a certificate,
// required client certificates without a CA, tokens without TLS), NOT_FOUND for unreadable files,
// and the token file's own errors.
absl::StatusOr<TransportSecurity> MakeTransportSecurity(const SecurityOptions& options);

}  // namespace cuimg

#endif  // CUIMG_SERVER_TRANSPORT_SECURITY_H_
