// How the client reaches the server, and how it reports RPC outcomes.
#ifndef CUIMG_CLIENT_CONNECTION_H_
#define CUIMG_CLIENT_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace cuimg {

struct ConnectionOptions {
  // gRPC target: host:port, dns:///host:port (every address the name resolves to),
  // unix:///path, or several host:port separated by commas.
  std::string target = "localhost:50051";
  // Per-RPC deadline; 0 means none.
  double timeout_seconds = 60;
  // "round_robin" spreads calls over every address of the target; "pick_first" uses one.
  std::string lb_policy = "round_robin";
  // Attempts per call for UNAVAILABLE (another replica, a restarted server); 1 disables retries.
  int max_attempts = 4;
  // Also retry RESOURCE_EXHAUSTED, after the delay the server pushes back (gRFC A6's
  // grpc-retry-pushback-ms; the server sends -1, no retry, for a request that can never fit).
  // The load tool turns it off: it counts the refusals.
  bool retry_overload = true;
  // TLS: on with `tls` or any file below. The server is verified against tls_ca_file (PEM), else
  // the system's roots; tls_cert_file/tls_key_file present a client certificate (mTLS).
  bool tls = false;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // The name the server's certificate must carry, when it differs from the target's host.
  std::string tls_server_name;
  // A file holding the bearer token sent as "authorization: Bearer TOKEN" (needs TLS). A file,
  // not a flag, so that the token never shows in process listings or shell history.
  std::string token_file;
};

// The files' contents, read once by LoadSecurity.
struct SecurityMaterial {
  bool tls = false;
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  std::string token;
};

// Reads the TLS and token files of `options`. INVALID_ARGUMENT naming the flag for a file that
// cannot be read or is empty, a certificate without its key (or the reverse), or a token without
// TLS.
absl::StatusOr<SecurityMaterial> LoadSecurity(const ConnectionOptions& options);

// The channel target and service config (load balancing, retry policy) for `options`.
// INVALID_ARGUMENT for an unknown lb_policy or max_attempts outside [1, 5].
struct ChannelSpec {
  std::string target;
  std::string service_config_json;
};
absl::StatusOr<ChannelSpec> MakeChannelSpec(const ConnectionOptions& options);

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUsage = 2;
// An input file cuimg cannot read as data: a bad header, a codec stream that does not decode,
// values out of range (a usage error is 2: the command line is wrong, not the data).
inline constexpr int kExitBadData = 3;

// The CLI's exit code for an input that could not be read: kExitUsage (2) when the path is wrong
// (NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION), kExitBadData (3) when its contents are
// (anything else: a header, a codec stream, values out of range, a feature cuimg does not read).
// Write errors are usage errors (the output path or format chosen).
int ExitCodeForReadError(const absl::Status& status);
// Prints "error: MESSAGE" (the reader's message names the file) on stderr and returns
// ExitCodeForReadError(status): how every command reports an input it could not read.
int ReportReadError(const absl::Status& status);

// `status` (not OK) marked as coming from reading an input file, for code whose other errors are
// usage errors (the load driver builds its payload from flags and files alike); a payload, so it
// survives being passed along. OK passes unchanged.
absl::Status AsReadError(absl::Status status);
// ExitCodeForReadError for a status marked by AsReadError, kExitUsage for any other error,
// kExitOk for OK.
int ExitCodeOf(const absl::Status& status);
// Prints a failed status as ExitCodeOf classes it ("error: " for an input file, "usage: "
// otherwise) and returns ExitCodeOf(status).
int ReportCommandError(const absl::Status& status);

// A channel per MakeChannelSpec (an invalid spec falls back to the plain target, after the
// command validated it), with TLS and the token when `options` ask for them (files unreadable
// here give a plaintext channel; main validates them first with LoadSecurity).
// `channel_index` > 0 forces a separate connection (channels with identical arguments share one).
std::shared_ptr<grpc::Channel> MakeChannel(const ConnectionOptions& options, int channel_index = 0);
// Applies the deadline to a new call's context.
void PrepareContext(const ConnectionOptions& options, grpc::ClientContext* context);
// Prints "error: CODE [REASON] message" to stderr (DescribeRpcError: the reason and field of the
// status's ErrorInfo, e.g. "error: INVALID_ARGUMENT [VALUE_OUT_OF_RANGE] steps[0].element.width:
// ...") and returns kExitRpcError. The absl::Status form takes a status from FromGrpcStatus
// (other statuses print without a reason). For an UNAVAILABLE that gRPC made (no error details:
// the server did not answer) a hint follows: nothing listening at the address (connection
// refused), else the address and TLS.
int ReportRpcError(const grpc::Status& status);
int ReportRpcError(const absl::Status& status);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_CONNECTION_H_
