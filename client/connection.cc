#include "client/connection.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/wire_contract.h"

namespace cuimg {

absl::StatusOr<ChannelSpec> MakeChannelSpec(const ConnectionOptions& options) {
  if (options.lb_policy != "round_robin" && options.lb_policy != "pick_first") {
    return absl::InvalidArgumentError("--lb_policy: expected round_robin or pick_first");
  }
  if (options.max_attempts < 1 || options.max_attempts > 5) {
    return absl::InvalidArgumentError("--max_attempts: expected 1 to 5");
  }
  ChannelSpec spec;
  // Several comma-separated host:port become one ipv4/ipv6 target that the balancer spreads over.
  if (options.target.find(',') != std::string::npos &&
      options.target.find("://") == std::string::npos) {
    const bool v6 = options.target.find('[') != std::string::npos;
    spec.target = absl::StrCat(v6 ? "ipv6:" : "ipv4:", options.target);
  } else {
    spec.target = options.target;
  }
  std::string retry;
  if (options.max_attempts > 1) {
    retry = absl::StrCat(
        R"(,"methodConfig":[{"name":[{"service":"cuimg.v1.Imaging"},{"service":"grpc.health.v1.Health"}],)",
        R"("retryPolicy":{"maxAttempts":)", options.max_attempts,
        R"(,"initialBackoff":"0.05s","maxBackoff":"1s","backoffMultiplier":2,)",
        R"("retryableStatusCodes":["UNAVAILABLE")",
        options.retry_overload ? R"(,"RESOURCE_EXHAUSTED")" : "", "]}},",
        // A DetectStream is never replayed: gRPC would keep every frame sent for a retry.
        R"({"name":[{"service":"cuimg.v1.Imaging","method":"DetectStream"}]}])");
  }
  spec.service_config_json =
      absl::StrCat(R"({"loadBalancingConfig":[{")", options.lb_policy, R"(":{}}])", retry, "}");
  return spec;
}

namespace {

absl::StatusOr<std::string> ReadNonEmpty(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty())
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is empty"));
  return text.str();
}

std::shared_ptr<grpc::ChannelCredentials> MakeCredentials(const SecurityMaterial& m) {
  if (!m.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = m.ca_pem;
  ssl.pem_cert_chain = m.cert_pem;
  ssl.pem_private_key = m.key_pem;
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
  if (m.token.empty()) return creds;
  return grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(m.token));
}

}  // namespace

absl::StatusOr<SecurityMaterial> LoadSecurity(const ConnectionOptions& options) {
  SecurityMaterial m;
  m.tls = options.tls || !options.tls_ca_file.empty() || !options.tls_cert_file.empty() ||
          !options.tls_key_file.empty();
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file, --tls_key_file: give both or neither");
  }
  const std::pair<const std::string*, std::string*> files[] = {
      {&options.tls_ca_file, &m.ca_pem},
      {&options.tls_cert_file, &m.cert_pem},
      {&options.tls_key_file, &m.key_pem},
      {&options.token_file, &m.token}};
  const char* flags[] = {"--tls_ca_file", "--tls_cert_file", "--tls_key_file", "--token_file"};
  for (int i = 0; i < 4; ++i) {
    if (files[i].first->empty()) continue;
    absl::StatusOr<std::string> text = ReadNonEmpty(*files[i].first, flags[i]);
    if (!text.ok()) return text.status();
    *files[i].second = *std::move(text);
  }
  m.token = std::string(absl::StripAsciiWhitespace(m.token));
  if (!options.token_file.empty() && !m.tls) {
    return absl::InvalidArgumentError(
        "--token_file: tokens are sent only over TLS (add --tls or --tls_ca_file)");
  }
  return m;
}

std::shared_ptr<grpc::Channel> MakeChannel(const ConnectionOptions& options, int channel_index) {
  grpc::ChannelArguments args;
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  if (channel_index > 0) args.SetInt("cuimg.channel_index", channel_index);
  // A connection that fails is tried again after 100 ms rather than gRPC's 1 s, within the span of
  // the retry policy's attempts: Debian's gRPC 1.51 now and then fails a local connect() that was
  // only in progress (grpc/grpc#35064).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // gRPC retries a call only while what it sent fits this buffer (256 KiB by default, less than
  // a VGA frame). It holds the sent messages until the answer starts: 64 MiB covers 4K RGB
  // frames and keeps a streamed volume from being held whole.
  args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, 64 << 20);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  std::string target = options.target;
  if (absl::StatusOr<ChannelSpec> spec = MakeChannelSpec(options); spec.ok()) {
    target = spec->target;
    args.SetServiceConfigJSON(spec->service_config_json);
  }
  absl::StatusOr<SecurityMaterial> security = LoadSecurity(options);
  return grpc::CreateCustomChannel(
      target, MakeCredentials(security.ok() ? *security : SecurityMaterial()), args);
}

void PrepareContext(const ConnectionOptions& options, grpc::ClientContext* context) {
  if (options.timeout_seconds > 0) {
    context->set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<std::int64_t>(options.timeout_seconds * 1e6)));
  }
}

int ExitCodeForReadError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kFailedPrecondition:
      return kExitUsage;
    default:
      return kExitBadData;
  }
}

namespace {
constexpr char kReadErrorPayload[] = "type.cuimg.io/cuimg.client.ReadError";
}  // namespace

int ReportReadError(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  return ExitCodeForReadError(status);
}

absl::Status AsReadError(absl::Status status) {
  if (!status.ok()) status.SetPayload(kReadErrorPayload, absl::Cord("1"));
  return status;
}

int ExitCodeOf(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  if (status.GetPayload(kReadErrorPayload).has_value()) return ExitCodeForReadError(status);
  return kExitUsage;
}

int ReportCommandError(const absl::Status& status) {
  const int code = ExitCodeOf(status);
  std::fprintf(stderr, "%s: %s\n", code == kExitUsage ? "usage" : "error",
               std::string(status.message()).c_str());
  return code;
}

int ReportRpcError(const grpc::Status& status) { return ReportRpcError(FromGrpcStatus(status)); }

int ReportRpcError(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", DescribeRpcError(status).c_str());
  // Not when the server itself answered: its errors carry details (a server shutting down says
  // so), and a hint would only mislead.
  if (status.code() != absl::StatusCode::kUnavailable || ParseErrorDetails(status).has_value()) {
    return kExitRpcError;
  }
  const absl::string_view message = status.message();
  if (absl::StrContains(message, "Connection refused") ||
      absl::StrContains(message, "No such file or directory")) {
    // Nothing listens: TLS is not the question. A server that stops during a call answers
    // UNAVAILABLE, which the retry policy retries, so its reason may be lost to this one.
    std::fprintf(stderr,
                 "hint: nothing accepts connections at --target: the server is not running there, "
                 "or it stopped during the call (--max_attempts=1 shows its own reason)\n");
  } else {
    // A plaintext client at a TLS port (or the reverse) sees only "Socket closed" or a failed
    // handshake; the likely cause is worth a line.
    std::fprintf(stderr,
                 "hint: is the server up at --target, and do both sides agree on TLS? A server "
                 "started with --tls_cert_file needs --tls (or --tls_ca_file) here; a plaintext "
                 "one needs neither\n");
  }
  return kExitRpcError;
}

}  // namespace cuimg
