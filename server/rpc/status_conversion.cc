#include "server/rpc/status_conversion.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "proto/wire_contract.h"

namespace cuimg {

std::string WireReason(const absl::Status& status) {
  if (status.ok()) return "";
  std::string reason = ErrorReasonOf(status);
  if (!reason.empty()) return reason;
  switch (status.code()) {
    case absl::StatusCode::kCancelled:
      return std::string(ErrorReasonName(ErrorReason::kCancelled));
    case absl::StatusCode::kDeadlineExceeded:
      return std::string(ErrorReasonName(ErrorReason::kDeadlineTooShort));
    case absl::StatusCode::kUnavailable:
      return std::string(ErrorReasonName(ErrorReason::kUnavailable));
    case absl::StatusCode::kResourceExhausted:
      return std::string(ErrorReasonName(ErrorReason::kOverloaded));
    default:
      return std::string(ErrorReasonName(ErrorReason::kInternalError));
  }
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const absl::string_view message = status.message();
  std::string sent(message.substr(0, kMaxStatusMessageBytes));
  if (sent.size() < message.size()) absl::StrAppend(&sent, "...[", message.size(), " bytes]");
  // absl's canonical codes are defined to equal gRPC's (google/rpc/code.proto).
  return StatusWithErrorInfo(static_cast<grpc::StatusCode>(status.code()), std::move(sent),
                             WireReason(status), ErrorFieldOf(status));
}

}  // namespace cuimg
