// The parts of cuimg's API that travel beside its messages, written and read here only (the
// server, the CLI and the benchmarks link this; client/python/cuimg/wire_contract.py is the same
// contract in Python):
// - the `cuimg-timing` trailer: the server's stage times of the call;
// - the retry hints of a refusal: `cuimg-retry-after-ms` and gRPC's own `grpc-retry-pushback-ms`
//   (gRFC A6);
// - the error details: a google.rpc.Status in gRPC's status details whose google.rpc.ErrorInfo
//   (AIP-193) names the request field at fault.
#ifndef CUIMG_PROTO_WIRE_CONTRACT_H_
#define CUIMG_PROTO_WIRE_CONTRACT_H_

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cuimg {

inline constexpr char kTimingTrailer[] = "cuimg-timing";
inline constexpr char kRetryAfterTrailer[] = "cuimg-retry-after-ms";
inline constexpr char kRetryPushbackTrailer[] = "grpc-retry-pushback-ms";
// How long a client refused for a passing overload waits before it retries.
inline constexpr int kRetryAfterMs = 100;
// ErrorInfo's domain for every cuimg error, and its metadata key for the request field.
inline constexpr char kErrorDomain[] = "cuimg.io";
inline constexpr char kErrorFieldKey[] = "field";

// "INVALID_ARGUMENT", ...: a code's canonical name (Abseil's absl::StatusCodeToString, whose
// codes are gRPC's).
std::string StatusCodeName(grpc::StatusCode code);

// One call's stage times on the server (µs), the device that ran it (-1: the CPU backend's or
// none) and the GPU that decoded its JPEG input (-1: the CPU, or no decode). Parsed, a field the
// trailer did not carry reads -1.
struct TimingTrailer {
  double queue_us = -1;
  double decode_us = -1;
  double h2d_us = -1;
  double kernel_us = -1;
  double d2h_us = -1;
  double total_us = -1;
  int device = -1;
  int decode_device = -1;
};

// "queue_us=1.0 decode_us=0.0 h2d_us=2.5 kernel_us=30.1 d2h_us=2.0 total_us=40.2 device=0
// decode_device=-1": every field, µs to 0.1.
std::string FormatTimingTrailer(const TimingTrailer& timing);
// The fields of a trailer's text; unknown keys and malformed fields are skipped (a newer or
// older server's trailer still reads).
TimingTrailer ParseTimingTrailer(absl::string_view text);
// The timing trailer's text of a finished call, "" when the server sent none.
std::string TimingTrailerText(const grpc::ClientContext& context);

// Adds the retry hints of a refusal with `code` to a call's trailers. `transient`: retrying
// soon can succeed (an overload), so both hints say kRetryAfterMs; a RESOURCE_EXHAUSTED that
// cannot succeed (too large) gets gRPC's pushback -1, which stops a retry policy from retrying.
void AddRetryHints(grpc::ServerContextBase* ctx, grpc::StatusCode code, bool transient);
// The server's `cuimg-retry-after-ms` of a finished call: nullopt when it sent none.
std::optional<int> RetryAfterMs(const grpc::ClientContext& context);

// What an error's ErrorInfo says: reason, domain, and the field its metadata names ("" when the
// error is not about one field).
struct ErrorDetails {
  std::string reason;
  std::string domain;
  std::string field;
};

// A gRPC status with `code` and `message` whose details are a google.rpc.Status carrying one
// ErrorInfo: reason `reason`, domain kErrorDomain, metadata {kErrorFieldKey: field} unless
// `field` is empty. `code` must not be OK (an OK status carries no details).
grpc::Status StatusWithErrorInfo(grpc::StatusCode code, std::string message,
                                 absl::string_view reason, absl::string_view field);
// The ErrorInfo in a status's details; nullopt when it has none (an error made by gRPC itself,
// or by another server).
std::optional<ErrorDetails> ParseErrorDetails(const grpc::Status& status);

// A finished call's status as the absl::Status a client passes on: the same code and message,
// the status details kept as a payload (ParseErrorDetails reads them back). OK for OK.
absl::Status FromGrpcStatus(const grpc::Status& status);
// The ErrorInfo of a status made by FromGrpcStatus; nullopt as above, or for any other status.
std::optional<ErrorDetails> ParseErrorDetails(const absl::Status& status);
// "CODE [REASON] message" (the reason left out when the status carries no ErrorInfo), with
// " (field: F)" added when the error names a field its message does not start with: how the CLI
// prints a failed call after "error: ".
std::string DescribeRpcError(const grpc::Status& status);
std::string DescribeRpcError(const absl::Status& status);

}  // namespace cuimg

#endif  // CUIMG_PROTO_WIRE_CONTRACT_H_
