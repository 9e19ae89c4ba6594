// Errors as data. A refusal's cause (a documented reason, `ErrorReason`) and the request field
// at fault travel as payloads of the absl::Status, set where the error is raised and never
// parsed back from its message. The server copies them into the google.rpc.ErrorInfo it sends
// (server/rpc/status_conversion.cc); clients read reason and field from there.
//
// The reasons are listed once, in CUIMG_ERROR_REASONS below; proto/cuimg/v1/error_reason.proto
// documents the same names for clients, and a test holds the two lists equal.
#ifndef CUIMG_COMMON_ERROR_H_
#define CUIMG_COMMON_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cuimg {

// X(Name, "NAME"): every reason an error may carry. Names are UPPER_SNAKE (AIP-193), stable once
// released, and say what is wrong rather than which code the error has.
#define CUIMG_ERROR_REASONS(X)                                                                 \
  /* A required field is missing or left at its *_UNSPECIFIED value. */                        \
  X(FieldRequired, "FIELD_REQUIRED")                                                           \
  /* An enum field holds a value this server does not know. */                                 \
  X(UnknownEnumValue, "UNKNOWN_ENUM_VALUE")                                                    \
  /* A number is outside the range its field documents. */                                     \
  X(ValueOutOfRange, "VALUE_OUT_OF_RANGE")                                                     \
  /* A bytes field's length does not match the shape or layout it describes. */                \
  X(DataSizeMismatch, "DATA_SIZE_MISMATCH")                                                    \
  /* Two fields that may not be combined, or one that is not allowed in this context. */       \
  X(InvalidCombination, "INVALID_COMBINATION")                                                 \
  /* A value is well formed but larger than a server limit (the flag is named). */             \
  X(LimitExceeded, "LIMIT_EXCEEDED")                                                           \
  /* A structuring element larger than --max_element_extent or its input allows. */            \
  X(ElementTooLarge, "ELEMENT_TOO_LARGE")                                                      \
  /* The pixel type is not one this operation or step accepts. */                              \
  X(UnsupportedPixelType, "UNSUPPORTED_PIXEL_TYPE")                                            \
  /* The image's channels or dimensions are not what the operation takes (one channel, 2D). */ \
  X(UnsupportedImageShape, "UNSUPPORTED_IMAGE_SHAPE")                                          \
  /* Two images that must agree in shape or type do not. */                                    \
  X(ShapeMismatch, "SHAPE_MISMATCH")                                                           \
  /* Encoded bytes (PNG, JPEG, a DICOM frame, ...) that do not decode. */                      \
  X(CorruptEncodedData, "CORRUPT_ENCODED_DATA")                                                \
  /* A resident object's handle that the caller does not own or that has expired. */           \
  X(HandleNotFound, "HANDLE_NOT_FOUND")                                                        \
  /* A detector model the server has not loaded. */                                            \
  X(ModelNotFound, "MODEL_NOT_FOUND")                                                          \
  /* A shared-memory region that is unknown, too small, or shrank after registration. */       \
  X(SharedMemoryShrunk, "SHARED_MEMORY_SHRUNK")                                                \
  X(SharedMemoryNotFound, "SHARED_MEMORY_NOT_FOUND")                                           \
  /* The request's work estimate is over --max_request_work. */                                \
  X(WorkTooLarge, "WORK_TOO_LARGE")                                                            \
  /* The server is at capacity for now (in-flight requests, bytes, device memory). */          \
  X(Overloaded, "OVERLOADED")                                                                  \
  /* The request's deadline passed (or is too short to start the work). */                     \
  X(DeadlineTooShort, "DEADLINE_TOO_SHORT")                                                    \
  /* The client cancelled the call. */                                                         \
  X(Cancelled, "CANCELLED")                                                                    \
  /* The caller lacks a right (process, resident) or sent no valid credentials. */             \
  X(PermissionDenied, "PERMISSION_DENIED")                                                     \
  /* The server is shutting down or a device failed; retry elsewhere or later. */              \
  X(Unavailable, "UNAVAILABLE")                                                                \
  /* A fault of the server itself. */                                                          \
  X(InternalError, "INTERNAL_ERROR")

enum class ErrorReason {
#define CUIMG_ERROR_REASON_ENUM_(name, text) k##name,
  CUIMG_ERROR_REASONS(CUIMG_ERROR_REASON_ENUM_)
#undef CUIMG_ERROR_REASON_ENUM_
};

// "FIELD_REQUIRED", ...: the reason's documented name.
absl::string_view ErrorReasonName(ErrorReason reason);

// A status with `code` whose message is "<field>: <detail>" (just `detail` when `field` is
// empty), carrying `reason` and `field` as payloads. `code` must not be OK. `field` is the path
// in the request message ("steps[2].element.width"), relative to whatever the caller prefixes
// later with WithFieldPrefix.
absl::Status MakeError(absl::StatusCode code, ErrorReason reason, absl::string_view field,
                       absl::string_view detail);
// MakeError(kInvalidArgument, ...): the common case of a validator.
absl::Status InvalidFieldError(ErrorReason reason, absl::string_view field,
                               absl::string_view detail);

// The reason a status carries ("" when none was set: an error from a library, or OK).
std::string ErrorReasonOf(const absl::Status& status);
// The request field a status carries ("" when none).
std::string ErrorFieldOf(const absl::Status& status);

// `status` with `prefix` ("request.", "header.morphology.") put at the start of its message and
// before its field payload when it carries one. OK and an empty prefix pass unchanged.
absl::Status WithFieldPrefix(const absl::Status& status, absl::string_view prefix);
// `status` with `reason` attached unless it already carries one (errors from code that does not
// know the request, such as a library's). OK passes unchanged.
absl::Status WithDefaultReason(absl::Status status, ErrorReason reason);
// `status` with `text` appended to its message, keeping its payloads (absl::Status(code, msg)
// would drop them). OK passes unchanged.
absl::Status WithMessageSuffix(const absl::Status& status, absl::string_view text);

}  // namespace cuimg

#endif  // CUIMG_COMMON_ERROR_H_
