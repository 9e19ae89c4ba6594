// The one place where absl::Status becomes grpc::Status (codes are the same canonical set).
#ifndef CUIMG_SERVER_STATUS_CONVERSION_H_
#define CUIMG_SERVER_STATUS_CONVERSION_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace cuimg {

grpc::Status ToGrpcStatus(const absl::Status& status);
// "OK", "INVALID_ARGUMENT", ... (the label value used in metrics).
std::string StatusCodeName(absl::StatusCode code);

}  // namespace cuimg

#endif  // CUIMG_SERVER_STATUS_CONVERSION_H_
