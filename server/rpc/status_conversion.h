// The one place where absl::Status becomes grpc::Status (codes are the same canonical set), with
// the error details of the wire contract (proto/wire_contract.h).
#ifndef CUIMG_SERVER_STATUS_CONVERSION_H_
#define CUIMG_SERVER_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/v1/types.pb.h"

namespace cuimg {

// Longest status message sent to a client: it travels in a header, and gRPC clients refuse
// headers over 8 KiB by default (the whole status would be lost).
inline constexpr std::size_t kMaxStatusMessageBytes = 1024;

// The same code and message, the message cut to kMaxStatusMessageBytes (ending in
// "...[N bytes]" then); an error carries a google.rpc.ErrorInfo in its details (reason: the
// code's name, e.g. "INVALID_ARGUMENT"; metadata "field": ErrorField's).
grpc::Status ToGrpcStatus(const absl::Status& status);

// `status` as a batch entry's outcome (EntryStatus, types.proto: google.rpc.Status's fields): OK
// is code 0 alone; an error is what ToGrpcStatus sends as a failed call's status details (the
// code, the message cut as there, one ErrorInfo naming reason and field).
void ToEntryStatus(const absl::Status& status, v1::EntryStatus* out);

// The request field an error is about, "" when none. By the convention every validator follows,
// such an error's message starts with the field's path and ": " ("steps[2].radius: ...",
// "input.handle: ..."); only the codes that judge a request's content name a field
// (INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE, FAILED_PRECONDITION, RESOURCE_EXHAUSTED,
// ALREADY_EXISTS), so "authorization: ..." (UNAUTHENTICATED) names none.
absl::string_view ErrorField(const absl::Status& status);

}  // namespace cuimg

#endif  // CUIMG_SERVER_STATUS_CONVERSION_H_
