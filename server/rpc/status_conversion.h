// The one place where absl::Status becomes grpc::Status (codes are the same canonical set), with
// the error details of the wire contract (proto/wire_contract.h).
#ifndef CUIMG_SERVER_STATUS_CONVERSION_H_
#define CUIMG_SERVER_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cuimg {

// Longest status message sent to a client: it travels in a header, and gRPC clients refuse
// headers over 8 KiB by default (the whole status would be lost).
inline constexpr std::size_t kMaxStatusMessageBytes = 1024;

// The reason an error goes out with (proto/cuimg/v1/error_reason.proto): the one set where it
// was raised (cuimg/common/error.h), else one chosen by its code: CANCELLED, DEADLINE_TOO_SHORT
// (DEADLINE_EXCEEDED), UNAVAILABLE, OVERLOADED (RESOURCE_EXHAUSTED), and INTERNAL_ERROR for every
// other code (an error that judged the request without saying why is a fault of the server).
// "" for OK.
std::string WireReason(const absl::Status& status);

// The same code and message, the message cut to kMaxStatusMessageBytes (ending in
// "...[N bytes]" then); an error carries a google.rpc.ErrorInfo in its details: reason
// WireReason's, metadata "field" the request field the error was raised about (its payload,
// never read from the message), none when it names no field.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace cuimg

#endif  // CUIMG_SERVER_STATUS_CONVERSION_H_
