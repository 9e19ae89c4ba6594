// The one place where absl::Status becomes grpc::Status (codes are the same canonical set).
#ifndef CUIMG_SERVER_STATUS_CONVERSION_H_
#define CUIMG_SERVER_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"

namespace cuimg {

// Longest status message sent to a client: it travels in a header, and gRPC clients refuse
// headers over 8 KiB by default (the whole status would be lost).
inline constexpr std::size_t kMaxStatusMessageBytes = 1024;

// The same code and message, the message cut to kMaxStatusMessageBytes (ending in
// "...[N bytes]" then).
grpc::Status ToGrpcStatus(const absl::Status& status);
// "OK", "INVALID_ARGUMENT", ... (the label value used in metrics).
std::string StatusCodeName(absl::StatusCode code);

}  // namespace cuimg

#endif  // CUIMG_SERVER_STATUS_CONVERSION_H_
