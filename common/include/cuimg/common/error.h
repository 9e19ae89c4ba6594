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
// released, and say what is wrong rather than which code the error has (several reasons share a
// code). proto/cuimg/v1/error_reason.proto lists the same names as ERROR_REASON_<NAME>.
#define CUIMG_ERROR_REASONS(X)                                                                     \
  /* --- The request's content (INVALID_ARGUMENT unless said otherwise). --- */                    \
  /* A required field is missing or left at its *_UNSPECIFIED value, or a oneof has no member. */  \
  X(FieldRequired, "FIELD_REQUIRED")                                                               \
  /* An enum field holds a value this server does not know. */                                     \
  X(UnknownEnumValue, "UNKNOWN_ENUM_VALUE")                                                        \
  /* A number is outside the range its field documents (NaN and infinities included). */           \
  X(ValueOutOfRange, "VALUE_OUT_OF_RANGE")                                                         \
  /* A text field is not in its documented form: a handle's or frame id's length, a */             \
  /* shared-memory key's characters. */                                                            \
  X(InvalidFormat, "INVALID_FORMAT")                                                               \
  /* A bytes field (or a stream's bytes) whose length does not match the shape or count it */      \
  /* is declared with. */                                                                          \
  X(DataSizeMismatch, "DATA_SIZE_MISMATCH")                                                        \
  /* Two fields that may not be combined, or one that is not allowed in this context. */           \
  X(InvalidCombination, "INVALID_COMBINATION")                                                     \
  /* The request's bytes do not parse as its message. */                                           \
  X(MalformedMessage, "MALFORMED_MESSAGE")                                                         \
  /* A stream message its position does not allow: a chunk or slab before the first message's */   \
  /* header, a second header, triangles before every position. */                                  \
  X(MessageOutOfOrder, "MESSAGE_OUT_OF_ORDER")                                                     \
  /* A value larger than a server limit (the message names the flag): retrying cannot help. */     \
  X(LimitExceeded, "LIMIT_EXCEEDED")                                                               \
  /* A structuring element larger than --max_element_extent allows. */                             \
  X(ElementTooLarge, "ELEMENT_TOO_LARGE")                                                          \
  /* The pixel type is not one this operation or step accepts. */                                  \
  X(UnsupportedPixelType, "UNSUPPORTED_PIXEL_TYPE")                                                \
  /* The image's channels or dimensions are not what the operation takes (one channel, 2D). */     \
  X(UnsupportedImageShape, "UNSUPPORTED_IMAGE_SHAPE")                                              \
  /* Two images that must agree in shape or type do not. */                                        \
  X(ShapeMismatch, "SHAPE_MISMATCH")                                                               \
  /* Encoded bytes (PNG, JPEG, a DICOM frame, ...) that do not decode. */                          \
  X(CorruptEncodedData, "CORRUPT_ENCODED_DATA")                                                    \
  /* Encoded bytes in a format or variant this server does not decode. */                          \
  X(UnsupportedEncoding, "UNSUPPORTED_ENCODING")                                                   \
  /* --- What the request names (NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS). --- */           \
  /* A resident object's handle the caller does not hold: never made, released, expired or */      \
  /* evicted (the message says when and why). */                                                   \
  X(HandleNotFound, "HANDLE_NOT_FOUND")                                                            \
  /* A resident handle that names a mesh where an image is needed, or the reverse. */              \
  X(ObjectKindMismatch, "OBJECT_KIND_MISMATCH")                                                    \
  /* A detector model the server has not loaded. */                                                \
  X(ModelNotFound, "MODEL_NOT_FOUND")                                                              \
  /* No shared-memory region under this handle for this caller, or no object under this key. */    \
  X(SharedMemoryNotFound, "SHARED_MEMORY_NOT_FOUND")                                               \
  /* The bytes an image or result needs at its offset pass the region's end, or the object is */   \
  /* smaller than the byte_size registered. */                                                     \
  X(SharedMemoryTooSmall, "SHARED_MEMORY_TOO_SMALL")                                               \
  /* A registered shared-memory object shrank below its registered size. */                        \
  X(SharedMemoryShrunk, "SHARED_MEMORY_SHRUNK")                                                    \
  /* The server offers no shared memory (--shared_memory), or not to this caller (not on its */    \
  /* host). */                                                                                     \
  X(SharedMemoryUnavailable, "SHARED_MEMORY_UNAVAILABLE")                                          \
  /* The shared-memory object is registered already (under this or another name). */               \
  X(AlreadyRegistered, "ALREADY_REGISTERED")                                                       \
  /* --- Capacity (RESOURCE_EXHAUSTED). --- */                                                     \
  /* The request's work estimate is over --max_request_work: split it. */                          \
  X(WorkTooLarge, "WORK_TOO_LARGE")                                                                \
  /* The caller's own share is used up (its shared-memory regions or bytes): it must free some. */ \
  X(QuotaExceeded, "QUOTA_EXCEEDED")                                                               \
  /* A capacity is full for now (requests or bytes in flight, resident memory other clients */     \
  /* hold, this caller's open uploads): retrying later can succeed; the answer carries retry */    \
  /* hints. */                                                                                     \
  X(Overloaded, "OVERLOADED")                                                                      \
  /* --- The call itself. --- */                                                                   \
  /* The call's deadline passed before its work was done (DEADLINE_EXCEEDED). */                   \
  X(DeadlineTooShort, "DEADLINE_TOO_SHORT")                                                        \
  /* A stream sent nothing for longer than the server waits (--upload_idle_timeout_ms). */         \
  X(IdleTimeout, "IDLE_TIMEOUT")                                                                   \
  /* The client cancelled the call or stopped reading its results (CANCELLED). */                  \
  X(Cancelled, "CANCELLED")                                                                        \
  /* The call carried no bearer token, or one the server does not know (UNAUTHENTICATED). */       \
  X(Unauthenticated, "UNAUTHENTICATED")                                                            \
  /* The caller lacks a right this RPC needs (process, resident), or the object it names is */     \
  /* not its own (PERMISSION_DENIED). */                                                           \
  X(PermissionDenied, "PERMISSION_DENIED")                                                         \
  /* The server is stopping: retry on another replica (UNAVAILABLE). */                            \
  X(ShuttingDown, "SHUTTING_DOWN")                                                                 \
  /* A device failed or none is healthy: retry later or elsewhere (UNAVAILABLE). */                \
  X(Unavailable, "UNAVAILABLE")                                                                    \
  /* A fault of the server itself, or an error it raised without classifying it. */                \
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
// later with WithFieldPrefix: field names joined by '.', an element of a repeated field as
// name[i], and a oneof's own name where none of its members is set ("header.operation").
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
// `status`, raised by code that does not know the request (a store lookup, a decoder, a
// budget), about the request field `field`: its message becomes "<field>: <message>" and its
// field payload `field`. A status that names a field already, OK, and an empty `field` pass
// unchanged (the raise site knew better).
absl::Status AtField(const absl::Status& status, absl::string_view field);
// `status` with code `code` (not OK), its message and payloads kept. OK passes unchanged.
absl::Status WithCode(const absl::Status& status, absl::StatusCode code);
// `status` with `reason` attached unless it already carries one (errors from code that does not
// know the request, such as a library's). OK passes unchanged.
absl::Status WithDefaultReason(absl::Status status, ErrorReason reason);
// `status` with `text` appended to its message, keeping its payloads (absl::Status(code, msg)
// would drop them). OK passes unchanged.
absl::Status WithMessageSuffix(const absl::Status& status, absl::string_view text);

}  // namespace cuimg

#endif  // CUIMG_COMMON_ERROR_H_
