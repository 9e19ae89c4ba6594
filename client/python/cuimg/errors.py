"""The errors every cuimg call raises when the server refuses or fails it.

Each is a CuimgError (catch that for all of them) carrying `code` (the grpc.StatusCode),
`details` (the server's message), and from the error's google.rpc.ErrorInfo (wire_contract.py)
`reason`, the documented cause (proto/cuimg/v1/error_reason.proto: "VALUE_OUT_OF_RANGE",
"OVERLOADED", ...) and `field`, the request field at fault ("steps[0].element.width"; "" when
the error is about no one field). The class says what to do about it, by reason (REASON_CLASSES);
an error without a reason this package knows (one made by gRPC itself, or by a newer server)
gets its class from its code (CODE_CLASSES), else stays a plain CuimgError.
"""
from __future__ import annotations

from typing import Dict, Type

import grpc

from cuimg import wire_contract


class CuimgError(Exception):
    """An RPC failed: `code` is the grpc.StatusCode, `details` the server's message, `field` the
    request field at fault and `reason` the error's documented reason ("" when the error carries
    no ErrorInfo)."""

    def __init__(self, code: grpc.StatusCode, details: str, field: str = "", reason: str = ""):
        super().__init__(f"{code.name}{f' [{reason}]' if reason else ''}: {details}")
        self.code = code
        self.details = details
        self.field = field
        self.reason = reason

    @classmethod
    def of(cls, error: grpc.RpcError) -> "CuimgError":
        """The error of a failed call, as the subclass its reason (or code) names."""
        info = wire_contract.error_info(error.trailing_metadata())
        return make_error(error.code(), error.details() or "", info)


class InvalidRequestError(CuimgError):
    """The request's content is wrong (a field missing, out of range, of the wrong size or
    shape, bytes that do not decode): change the request."""


class LimitExceededError(CuimgError):
    """The request is larger than this server allows (a size, an element, its estimated work):
    split it or make it smaller; retrying as it is cannot succeed."""


class NotFoundError(CuimgError):
    """What the request names does not exist for this caller: a resident handle (released,
    expired or evicted: the message says when and why), a detector model, a shared-memory
    region or object."""


class SharedMemoryError(CuimgError):
    """A shared-memory region cannot serve the call: too small for the bytes at its offset,
    shrunk since it was registered, registered already, or not offered by this server or to
    this client."""


class QuotaExceededError(CuimgError):
    """The caller's own share (its shared-memory regions or bytes) is used up: free some first."""


class RetryableError(CuimgError):
    """The server cannot take the call now (overloaded, shutting down, a device failed, or
    unreachable): retry later or on another replica. The client's retry policy has retried an
    overload already, after the server's hint."""


class DeadlineExceededError(CuimgError):
    """The call's deadline passed (on either side), or a stream sent nothing for too long."""


class CallCancelledError(CuimgError):
    """The call was cancelled, or its client stopped reading the results."""


class AuthError(CuimgError):
    """No valid bearer token, or the caller's identity lacks a right the RPC needs or names an
    object that is not its own."""


class ServerError(CuimgError):
    """A fault of the server itself (INTERNAL_ERROR)."""


# Every reason of proto/cuimg/v1/error_reason.proto and its class (a test holds the two lists
# equal).
REASON_CLASSES: Dict[str, Type[CuimgError]] = {
    "FIELD_REQUIRED": InvalidRequestError,
    "UNKNOWN_ENUM_VALUE": InvalidRequestError,
    "VALUE_OUT_OF_RANGE": InvalidRequestError,
    "INVALID_FORMAT": InvalidRequestError,
    "DATA_SIZE_MISMATCH": InvalidRequestError,
    "INVALID_COMBINATION": InvalidRequestError,
    "MALFORMED_MESSAGE": InvalidRequestError,
    "MESSAGE_OUT_OF_ORDER": InvalidRequestError,
    "UNSUPPORTED_PIXEL_TYPE": InvalidRequestError,
    "UNSUPPORTED_IMAGE_SHAPE": InvalidRequestError,
    "SHAPE_MISMATCH": InvalidRequestError,
    "CORRUPT_ENCODED_DATA": InvalidRequestError,
    "UNSUPPORTED_ENCODING": InvalidRequestError,
    "OBJECT_KIND_MISMATCH": InvalidRequestError,
    "LIMIT_EXCEEDED": LimitExceededError,
    "ELEMENT_TOO_LARGE": LimitExceededError,
    "WORK_TOO_LARGE": LimitExceededError,
    "HANDLE_NOT_FOUND": NotFoundError,
    "MODEL_NOT_FOUND": NotFoundError,
    "SHARED_MEMORY_NOT_FOUND": NotFoundError,
    "SHARED_MEMORY_TOO_SMALL": SharedMemoryError,
    "SHARED_MEMORY_SHRUNK": SharedMemoryError,
    "SHARED_MEMORY_UNAVAILABLE": SharedMemoryError,
    "ALREADY_REGISTERED": SharedMemoryError,
    "QUOTA_EXCEEDED": QuotaExceededError,
    "OVERLOADED": RetryableError,
    "SHUTTING_DOWN": RetryableError,
    "UNAVAILABLE": RetryableError,
    "DEADLINE_TOO_SHORT": DeadlineExceededError,
    "IDLE_TIMEOUT": DeadlineExceededError,
    "CANCELLED": CallCancelledError,
    "UNAUTHENTICATED": AuthError,
    "PERMISSION_DENIED": AuthError,
    "INTERNAL_ERROR": ServerError,
}

# The class of an error whose reason is unknown or absent, by its code.
CODE_CLASSES: Dict[grpc.StatusCode, Type[CuimgError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequestError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.UNAVAILABLE: RetryableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.CANCELLED: CallCancelledError,
    grpc.StatusCode.UNAUTHENTICATED: AuthError,
    grpc.StatusCode.PERMISSION_DENIED: AuthError,
    grpc.StatusCode.INTERNAL: ServerError,
}


def make_error(
    code: grpc.StatusCode, details: str, info: wire_contract.ErrorInfo | None = None
) -> CuimgError:
    """The CuimgError subclass for `info`'s reason, else for `code`, carrying its field and
    reason."""
    reason = info.reason if info else ""
    cls: Type[CuimgError] = REASON_CLASSES.get(reason) or CODE_CLASSES.get(code) or CuimgError
    return cls(code, details, info.field if info else "", reason)
