#include "server/rpc/status_conversion.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

bool NamesField(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAlreadyExists:
      return true;
    default:
      return false;
  }
}

// A field path: names of lower-case letters, digits and '_' (not starting with a digit), each
// with an optional "[index]", joined by '.'.
bool IsFieldPath(absl::string_view path) {
  bool name_start = true;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (name_start) {
      if (!(absl::ascii_islower(c) || c == '_')) return false;
      name_start = false;
    } else if (c == '.') {
      name_start = true;
    } else if (c == '[') {
      const std::size_t close = path.find(']', i);
      if (close == absl::string_view::npos || close == i + 1) return false;
      for (std::size_t k = i + 1; k < close; ++k) {
        if (!absl::ascii_isdigit(path[k])) return false;
      }
      i = close;
      if (i + 1 < path.size() && path[i + 1] != '.') return false;
    } else if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_')) {
      return false;
    }
  }
  return !path.empty() && !name_start;
}

}  // namespace

absl::string_view ErrorField(const absl::Status& status) {
  if (!NamesField(status.code())) return "";
  const absl::string_view message = status.message();
  const std::size_t colon = message.find(": ");
  if (colon == absl::string_view::npos) return "";
  const absl::string_view path = message.substr(0, colon);
  return IsFieldPath(path) ? path : "";
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const absl::string_view message = status.message();
  std::string sent(message.substr(0, kMaxStatusMessageBytes));
  if (sent.size() < message.size()) absl::StrAppend(&sent, "...[", message.size(), " bytes]");
  // absl's canonical codes are defined to equal gRPC's (google/rpc/code.proto).
  // Reason and field are the payloads set where the error was raised (cuimg/common/error.h).
  // Until every raise site sets them, a status without them falls back to the code's name and
  // the message's leading path.
  std::string reason = ErrorReasonOf(status);
  if (reason.empty()) reason = absl::StatusCodeToString(status.code());
  std::string field = ErrorFieldOf(status);
  if (field.empty()) field = std::string(ErrorField(status));
  return StatusWithErrorInfo(static_cast<grpc::StatusCode>(status.code()), std::move(sent), reason,
                             field);
}

void ToEntryStatus(const absl::Status& status, v1::EntryStatus* out) {
  out->Clear();
  if (status.ok()) return;
  // The details ToGrpcStatus writes are a serialized google.rpc.Status, whose fields EntryStatus
  // has under the same numbers.
  const grpc::Status sent = ToGrpcStatus(status);
  if (!out->ParseFromString(sent.error_details())) {
    out->set_code(static_cast<int>(status.code()));
    out->set_message(sent.error_message());
  }
}

}  // namespace cuimg
