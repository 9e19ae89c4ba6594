#include "proto/wire_contract.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace cuimg {
namespace {

// Where FromGrpcStatus keeps a status's details (google.rpc.Status bytes).
constexpr char kStatusDetailsPayload[] = "type.cuimg.io/grpc-status-details-bin";

std::string Describe(grpc::StatusCode code, absl::string_view message,
                     const std::optional<ErrorDetails>& details) {
  std::string out = StatusCodeName(code);
  if (details.has_value() && !details->reason.empty())
    absl::StrAppend(&out, " [", details->reason, "]");
  absl::StrAppend(&out, " ", message);
  if (details.has_value() && !details->field.empty() &&
      !absl::StartsWith(message, absl::StrCat(details->field, ": "))) {
    absl::StrAppend(&out, " (field: ", details->field, ")");
  }
  return out;
}

// A trailer's value as text ("" when absent).
std::string Trailer(const grpc::ClientContext& context, absl::string_view key) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(grpc::string_ref(key.data(), key.size()));
  if (it == trailers.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

std::string FormatTimingTrailer(const TimingTrailer& t) {
  return absl::StrFormat(
      "queue_us=%.1f decode_us=%.1f h2d_us=%.1f kernel_us=%.1f d2h_us=%.1f total_us=%.1f "
      "device=%d decode_device=%d",
      t.queue_us, t.decode_us, t.h2d_us, t.kernel_us, t.d2h_us, t.total_us, t.device,
      t.decode_device);
}

TimingTrailer ParseTimingTrailer(absl::string_view text) {
  TimingTrailer t;
  for (absl::string_view field : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(field, absl::MaxSplits('=', 1));
    double value = 0;
    if (!absl::SimpleAtod(kv.second, &value)) continue;
    if (kv.first == "queue_us") t.queue_us = value;
    if (kv.first == "decode_us") t.decode_us = value;
    if (kv.first == "h2d_us") t.h2d_us = value;
    if (kv.first == "kernel_us") t.kernel_us = value;
    if (kv.first == "d2h_us") t.d2h_us = value;
    if (kv.first == "total_us") t.total_us = value;
    if (kv.first == "device") t.device = static_cast<int>(value);
    if (kv.first == "decode_device") t.decode_device = static_cast<int>(value);
  }
  return t;
}

std::string TimingTrailerText(const grpc::ClientContext& context) {
  return Trailer(context, kTimingTrailer);
}

void AddRetryHints(grpc::ServerContextBase* ctx, grpc::StatusCode code, bool transient) {
  const std::string after = absl::StrCat(kRetryAfterMs);
  if (transient) ctx->AddTrailingMetadata(kRetryAfterTrailer, after);
  if (code == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    ctx->AddTrailingMetadata(kRetryPushbackTrailer, transient ? after : "-1");
  }
}

std::optional<int> RetryAfterMs(const grpc::ClientContext& context) {
  int ms = 0;
  const std::string text = Trailer(context, kRetryAfterTrailer);
  if (text.empty() || !absl::SimpleAtoi(text, &ms)) return std::nullopt;
  return ms;
}

grpc::Status StatusWithErrorInfo(grpc::StatusCode code, std::string message,
                                 absl::string_view reason, absl::string_view field) {
  google::rpc::ErrorInfo info;
  info.set_reason(std::string(reason));
  info.set_domain(kErrorDomain);
  if (!field.empty()) (*info.mutable_metadata())[kErrorFieldKey] = std::string(field);
  google::rpc::Status details;
  details.set_code(static_cast<int>(code));
  details.set_message(message);
  details.add_details()->PackFrom(info);
  return grpc::Status(code, std::move(message), details.SerializeAsString());
}

std::optional<ErrorDetails> ParseErrorDetails(const grpc::Status& status) {
  google::rpc::Status details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return std::nullopt;
  }
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::ErrorInfo info;
    if (!any.UnpackTo(&info)) continue;
    ErrorDetails out{info.reason(), info.domain(), ""};
    if (auto it = info.metadata().find(kErrorFieldKey); it != info.metadata().end()) {
      out.field = it->second;
    }
    return out;
  }
  return std::nullopt;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  if (!status.error_details().empty()) {
    out.SetPayload(kStatusDetailsPayload, absl::Cord(status.error_details()));
  }
  return out;
}

std::optional<ErrorDetails> ParseErrorDetails(const absl::Status& status) {
  const absl::optional<absl::Cord> details = status.GetPayload(kStatusDetailsPayload);
  if (status.ok() || !details.has_value()) return std::nullopt;
  return ParseErrorDetails(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                                        std::string(status.message()), std::string(*details)));
}

std::string DescribeRpcError(const grpc::Status& status) {
  return Describe(status.error_code(), status.error_message(), ParseErrorDetails(status));
}

std::string DescribeRpcError(const absl::Status& status) {
  return Describe(static_cast<grpc::StatusCode>(status.code()), status.message(),
                  ParseErrorDetails(status));
}

}  // namespace cuimg
